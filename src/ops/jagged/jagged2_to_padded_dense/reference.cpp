// jagged/jagged2_to_padded_dense/reference.cpp: the golden (accuracy.md): plain loops straight from
// the formula, one element copy each (bytes as they are). N_b by counting up to the block's root.
// Includes params.h, core and the goldens-only common/golden_offsets.h; shares no code with cpu/
// or cuda/.
#include <cstring>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/jagged2_to_padded_dense/impls.h"

namespace recops::ops::jagged2_to_padded_dense_ns {

Status run_reference(const Params& p, const Context&) {
  const auto* src = static_cast<const char*>(p.src);
  auto* dst = static_cast<char*>(p.dst);
  const auto es = static_cast<size_t>(p.elem_size);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = golden_offset(p.offsets, p.offsets_int64, p.offsets_stride, b);
    const int64_t size = golden_offset(p.offsets, p.offsets_int64, p.offsets_stride, b + 1) - o;
    int64_t N = 0;
    while ((N + 1) * (N + 1) <= size) ++N;
    const int64_t n = N < p.max_L ? N : p.max_L;
    if (!p.backward) {
      for (int64_t m = 0; m < p.max_L; ++m) {
        for (int64_t c = 0; c < p.max_L; ++c) {
          char* out = dst + (b * p.max_L * p.max_L + m * p.max_L + c) * p.elem_size;
          if (m < n && c < n) {
            std::memcpy(out, src + (o + m * N + c) * p.jagged_stride * p.elem_size, es);
          } else {
            std::memcpy(out, &p.padding_bits, es);  // little-endian: low bytes hold the value
          }
        }
      }
    } else {
      for (int64_t m = 0; m < N; ++m) {
        for (int64_t c = 0; c < N; ++c) {
          char* out = dst + (o + m * N + c) * p.elem_size;
          if (m < n && c < n) {
            std::memcpy(out, src + (b * p.dense_b + m * p.dense_m + c) * p.elem_size, es);
          } else {
            std::memset(out, 0, es);
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::jagged2_to_padded_dense_ns
