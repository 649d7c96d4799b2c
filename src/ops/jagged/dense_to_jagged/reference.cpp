// dense_to_jagged/reference.cpp: the golden, as the spec's formula, one element at a time over the
// jagged output: row r of sequence b (o_b <= r < o_{b+1}, l = r - o_b) is dense[b, l] for l < S,
// and 0 for l >= S.
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/dense_to_jagged/impls.h"

namespace recops::ops {

Status dense_to_jagged_reference(const RowCopyParams& p, const Context&) {
  const auto* dense = static_cast<const char*>(p.src);
  auto* out = static_cast<char*>(p.dst);
  const size_t es = static_cast<size_t>(p.elem_size);
  // The sequence b of row r: the last one starting at or before r (the entry has checked the
  // offsets, so it has row r).
  int64_t b = 0;
  for (int64_t r = 0; r < p.total_L; ++r) {
    while (b + 1 < p.B &&
           core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, b + 1) <= r)
      ++b;
    const int64_t l = r - core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, b);
    for (int64_t d = 0; d < p.D; ++d) {
      char* dst = out + (r * p.jagged_row_stride + d) * p.elem_size;
      if (l >= p.S) {
        std::memset(dst, 0, es);  // all-zero bits are 0 in every dtype of dtype.h
        continue;
      }
      std::memcpy(
          dst, dense + (b * p.dense_batch_stride + l * p.dense_row_stride + d) * p.elem_size, es);
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
