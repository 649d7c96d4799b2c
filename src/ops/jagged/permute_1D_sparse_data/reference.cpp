// jagged/permute_1D_sparse_data/reference.cpp: the golden (accuracy.md; exact): plain loops
// straight from the card. Output segment i is input segment permute[i]: its length, then its
// values' and weights' rows, element by element as bytes. Shares no code with the CPU and CUDA
// paths it judges (common/permute_*).
#include <cstring>
#include <vector>

#include "ops/jagged/permute_1D_sparse_data/impls.h"

namespace recops::ops::permute_1D_sparse_data_ns {

Status run_reference(const PermuteParams& p, const Context&) {
  const auto at = [](const void* ptr, bool int64, int64_t i) -> int64_t {
    return int64 ? static_cast<const int64_t*>(ptr)[i] : static_cast<const int32_t*>(ptr)[i];
  };
  // start[s]: the first values row of input segment s.
  std::vector<int64_t> start(static_cast<size_t>(p.T + 1), 0);
  for (int64_t s = 0; s < p.T; ++s)
    start[s + 1] = start[s] + at(p.lengths, p.lengths_int64, s * p.lengths_stride_t);
  // The permuted lengths must sum to R, the output rows (on the CPU the entry leaves this rule to
  // the implementations).
  int64_t want = 0;
  for (int64_t i = 0; i < p.P; ++i) {
    const int64_t s = at(p.permute, p.permute_int64, i * p.permute_stride);
    if (__builtin_add_overflow(want, start[s + 1] - start[s], &want)) want = -1;
    if (want < 0) break;
  }
  if (want != p.R) return permute_rows_error(p.op, want, p.R);
  int64_t pos = 0;  // the first output row of output segment i
  for (int64_t i = 0; i < p.P; ++i) {
    const int64_t s = at(p.permute, p.permute_int64, i * p.permute_stride);
    const int64_t n = start[s + 1] - start[s];
    if (p.lengths_int64)
      static_cast<int64_t*>(p.out_lengths)[i] = n;
    else
      static_cast<int32_t*>(p.out_lengths)[i] = static_cast<int32_t>(n);
    for (int k = 0; k < p.num_payloads; ++k) {
      const PermutePayload& t = p.payload[k];
      if (t.D == 0) continue;  // rows of no bytes: nothing to copy (P·n empty rows timed out)
      for (int64_t l = 0; l < n; ++l)
        for (int64_t d = 0; d < t.D; ++d)
          std::memcpy(static_cast<char*>(t.dst) + ((pos + l) * t.D + d) * t.elem_size,
                      static_cast<const char*>(t.src) +
                          ((start[s] + l) * t.src_row_stride + d) * t.elem_size,
                      static_cast<size_t>(t.elem_size));
    }
    pos += n;
  }
  return Status::Ok();
}

}  // namespace recops::ops::permute_1D_sparse_data_ns
