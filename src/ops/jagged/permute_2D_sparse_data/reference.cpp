// jagged/permute_2D_sparse_data/reference.cpp: the golden (accuracy.md; exact): plain loops
// straight from the card. Segment (t, b) of the input is lengths[t, b] long and segments lie in
// row-major order; output segment (i, b) is input segment (permute[i], b): its length, then its
// values' and weights' rows, element by element as bytes. Shares no code with the CPU and CUDA
// paths it judges (common/permute_*).
#include <cstring>
#include <vector>

#include "ops/jagged/permute_2D_sparse_data/impls.h"

namespace recops::ops::permute_2D_sparse_data_ns {

Status run_reference(const PermuteParams& p, const Context&) {
  const auto at = [](const void* ptr, bool int64, int64_t i) -> int64_t {
    return int64 ? static_cast<const int64_t*>(ptr)[i] : static_cast<const int32_t*>(ptr)[i];
  };
  const auto length = [&](int64_t t, int64_t b) {
    return at(p.lengths, p.lengths_int64, t * p.lengths_stride_t + b * p.lengths_stride_b);
  };
  // first[t][b]: the first values row of input segment (t, b), flattened as t * B + b.
  std::vector<int64_t> first(static_cast<size_t>(p.T * p.B + 1), 0);
  for (int64_t t = 0; t < p.T; ++t)
    for (int64_t b = 0; b < p.B; ++b) first[t * p.B + b + 1] = first[t * p.B + b] + length(t, b);
  // The permuted lengths must sum to R, the output rows (on the CPU the entry leaves this rule to
  // the implementations).
  int64_t want = 0;
  for (int64_t i = 0; i < p.P && want >= 0; ++i) {
    const int64_t t = at(p.permute, p.permute_int64, i * p.permute_stride);
    for (int64_t b = 0; b < p.B && want >= 0; ++b)
      if (__builtin_add_overflow(want, length(t, b), &want)) want = -1;
  }
  if (want != p.R) return permute_rows_error(p.op, want, p.R);
  int64_t pos = 0;  // the first output row of output segment (i, b)
  for (int64_t i = 0; i < p.P; ++i) {
    const int64_t t = at(p.permute, p.permute_int64, i * p.permute_stride);
    for (int64_t b = 0; b < p.B; ++b) {
      const int64_t n = length(t, b), from = first[t * p.B + b];
      if (p.lengths_int64)
        static_cast<int64_t*>(p.out_lengths)[i * p.B + b] = n;
      else
        static_cast<int32_t*>(p.out_lengths)[i * p.B + b] = static_cast<int32_t>(n);
      for (int k = 0; k < p.num_payloads; ++k) {
        const PermutePayload& w = p.payload[k];
        if (w.D == 0) continue;  // rows of no bytes: nothing to copy (P·n empty rows timed out)
        for (int64_t l = 0; l < n; ++l)
          for (int64_t d = 0; d < w.D; ++d)
            std::memcpy(
                static_cast<char*>(w.dst) + ((pos + l) * w.D + d) * w.elem_size,
                static_cast<const char*>(w.src) + ((from + l) * w.src_row_stride + d) * w.elem_size,
                static_cast<size_t>(w.elem_size));
      }
      pos += n;
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::permute_2D_sparse_data_ns
