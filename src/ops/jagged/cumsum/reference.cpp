// complete_cumsum/reference.cpp: the golden for the three cumsum ops, a plain running sum per row.
// complete: out[r, 0] = 0, out[r, i+1] = out[r, i] + t[r, i]; exclusive: out[i] = sum_{j<i} t[j];
// inclusive: out[i] = sum_{j<=i} t[j]. Sums in int64 (wrapping on int64 overflow, as unsigned).
#include <cstdint>

#include "ops/jagged/cumsum/impls.h"
#include "recops/status.h"

namespace recops::ops {

Status cumsum_reference(const CumsumParams& p, const Context&) {
  const int64_t extra = p.kind == CumsumKind::complete ? 1 : 0;
  for (int64_t r = 0; r < p.R; ++r) {
    uint64_t sum = 0;
    for (int64_t i = 0; i < p.n + extra; ++i) {
      // Output position i of this row; complete and exclusive write the sum before adding t[i].
      const int64_t idx = r * p.in_row_stride + i * p.in_stride;
      uint64_t add = 0;
      if (i < p.n)
        add = p.in_int64 ? static_cast<uint64_t>(static_cast<const int64_t*>(p.in)[idx])
                         : static_cast<uint64_t>(
                               static_cast<int64_t>(static_cast<const int32_t*>(p.in)[idx]));
      if (p.kind == CumsumKind::inclusive) sum += add;
      const int64_t v = static_cast<int64_t>(sum);
      const int64_t o = r * p.out_row_stride + i;
      if (p.out_int64) {
        static_cast<int64_t*>(p.out)[o] = v;
      } else {
        if (v < INT32_MIN || v > INT32_MAX)
          return Status(StatusCode::out_of_range,
                        detail::cat(p.kind == CumsumKind::complete    ? "complete_cumsum"
                                    : p.kind == CumsumKind::exclusive ? "exclusive_cumsum"
                                                                      : "inclusive_cumsum",
                                    ": the sum at output [", r, ", ", i, "] is ", v,
                                    ", which does not fit the int32 output; use out_dtype int64"));
        static_cast<int32_t*>(p.out)[o] = static_cast<int32_t>(v);
      }
      if (p.kind != CumsumKind::inclusive) sum += add;
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
