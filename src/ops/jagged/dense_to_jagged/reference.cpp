// dense_to_jagged/reference.cpp: the golden, as the spec's formula, one element at a time:
// row (b, l) of the output = dense[b, l] for l < min(L_b, S), 0 for S <= l < L_b.
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/dense_to_jagged/impls.h"

namespace recops::ops {

Status dense_to_jagged_reference(const DenseToJaggedParams& p, const Context&) {
  const auto* dense = static_cast<const char*>(p.dense);
  auto* out = static_cast<char*>(p.out);
  const size_t es = static_cast<size_t>(p.elem_size);
  auto offset = [&](int64_t i) {
    return core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  };
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset(b), length = offset(b + 1) - start;
    for (int64_t l = 0; l < length; ++l) {
      for (int64_t d = 0; d < p.D; ++d) {
        char* dst = out + ((start + l) * p.out_row_stride + d) * p.elem_size;
        if (l < p.S) {
          std::memcpy(dst,
                      dense + (b * p.dense_batch_stride + l * p.dense_row_stride + d) * p.elem_size,
                      es);
        } else {
          std::memset(dst, 0, es);  // all-zero bits are 0 in every dtype of dtype.h
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
