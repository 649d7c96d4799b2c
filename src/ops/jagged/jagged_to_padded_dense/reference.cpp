// jagged_to_padded_dense/reference.cpp: the golden, written as the spec's formula, one element at a
// time over the dense output: out[b, l, d] = values[o_b + l, d] for l < min(L_b, max_L), else
// padding.
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/jagged_to_padded_dense/impls.h"

namespace recops::ops {

Status jagged_to_padded_dense_reference(const RowCopyParams& p, const Context&) {
  const auto* values = static_cast<const char*>(p.src);
  auto* out = static_cast<char*>(p.dst);
  const size_t es = static_cast<size_t>(p.elem_size);
  auto offset = [&](int64_t i) {
    return core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  };
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset(b), length = offset(b + 1) - start;
    for (int64_t l = 0; l < p.S; ++l) {
      for (int64_t d = 0; d < p.D; ++d) {
        char* dst = out + (b * p.dense_batch_stride + l * p.dense_row_stride + d) * p.elem_size;
        if (l < length) {
          std::memcpy(dst, values + ((start + l) * p.jagged_row_stride + d) * p.elem_size, es);
        } else {
          std::memcpy(dst, &p.padding_bits, es);  // little-endian: low bytes hold the value
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
