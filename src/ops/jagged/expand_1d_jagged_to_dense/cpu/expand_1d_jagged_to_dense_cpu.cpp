// jagged/expand_1d_jagged_to_dense/cpu/expand_1d_jagged_to_dense_cpu.cpp: the optimized CPU path:
// threads take rows b in static chunks; a row is a strided copy of min(L_b, max_len) elements
// (moved as unsigned integers of their size) and a fill with the last one (0 when empty).
#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "ops/jagged/expand_1d_jagged_to_dense/impls.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {
namespace {
int64_t offset_at(const Params& p, int64_t i) {
  const int64_t k = i * p.offsets_stride;
  return p.offsets_int64 ? static_cast<const int64_t*>(p.seq_offsets)[k]
                         : static_cast<const int32_t*>(p.seq_offsets)[k];
}

template <class E>
void expand(const Params& p, int threads) {
  const E* v = static_cast<const E*>(p.values);
  E* out = static_cast<E*>(p.out);
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(1, p.max_len));
  core::parallel_for(p.B, grain, threads, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t o = offset_at(p, b), L = offset_at(p, b + 1) - o;
      E* row = out + b * p.max_len;
      const int64_t n = std::min(L, p.max_len);
      for (int64_t j = 0; j < n; ++j) row[j] = v[(o + j) * p.values_stride];
      const E fill = L > 0 ? v[(o + L - 1) * p.values_stride] : E(0);
      std::fill(row + std::max<int64_t>(n, 0), row + p.max_len, fill);
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  switch (p.elem_size) {
    case 1: expand<uint8_t>(p, ctx.num_threads); return Status::Ok();
    case 2: expand<uint16_t>(p, ctx.num_threads); return Status::Ok();
    case 4: expand<uint32_t>(p, ctx.num_threads); return Status::Ok();
    case 8: expand<uint64_t>(p, ctx.num_threads); return Status::Ok();
    default:
      return Status(StatusCode::internal,
                    "expand_1d_jagged_to_dense: cpu_generic: bad element size");
  }
}

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
