// jagged/expand_1d_jagged_to_dense/reference.cpp: the golden (accuracy.md): plain loops over
// (b, j), one element copy each (bytes as they are). Includes params.h, core and the goldens-only
// common/golden_offsets.h; shares no code with cpu/ or cuda/.
#include <cstring>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/expand_1d_jagged_to_dense/impls.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {

Status run_reference(const Params& p, const Context&) {
  const auto* v = static_cast<const char*>(p.values);
  auto* out = static_cast<char*>(p.out);
  const size_t es = static_cast<size_t>(p.elem_size);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t o = golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, b);
    const int64_t L = golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, b + 1) - o;
    for (int64_t j = 0; j < p.max_len; ++j) {
      char* dst = out + (b * p.max_len + j) * p.elem_size;
      if (L <= 0) {
        std::memset(dst, 0, es);
      } else {
        const int64_t row = o + (j < L ? j : L - 1);
        std::memcpy(dst, v + row * p.values_stride * p.elem_size, es);
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
