// dense_to_jagged/cpu: the optimized CPU path. Work items are output rows r in [0, total_L), split
// into equal contiguous ranges across threads; each thread finds the sequence of its first row by
// binary search over the offsets, then walks forward. A row is one memcpy (or a memset past S).
#include <algorithm>
#include <cstring>

#include "core/memory.h"
#include "core/parallel.h"
#include "ops/jagged/common/row_copy_tuning.h"
#include "core/scalar.h"
#include "ops/jagged/dense_to_jagged/impls.h"

namespace recops::ops {
namespace {
const std::vector<TuneConfig>& candidates() {
  static const std::vector<TuneConfig> c = core::row_copy_cpu_candidates();
  return c;
}
}  // namespace

std::vector<TuneConfig> dense_to_jagged_cpu_candidates() {
  return candidates();
}

Status dense_to_jagged_cpu(const DenseToJaggedParams& p, const Context& ctx) {
  if (p.total_L == 0 || p.D == 0) return Status::Ok();
  const size_t row_bytes = static_cast<size_t>(p.D * p.elem_size);
  const auto* dense = static_cast<const char*>(p.dense);
  auto* out = static_cast<char*>(p.out);
  if (p.out_row_stride >= 0)  // the output's extent, in bytes
    core::advise_huge_pages(
        out, static_cast<size_t>(((p.total_L - 1) * p.out_row_stride + p.D) * p.elem_size));
  auto offset = [&](int64_t i) {
    return core::clamp_offset(
        core::load_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i), p.total_L);
  };
  // Grain: about grain_bytes of output per chunk (default 64 KiB) so that small problems stay on
  // one thread.
  core::TuneQuery q;
  q.op = "dense_to_jagged";
  q.impl = "cpu_generic";
  q.dtype = p.dtype;
  q.bucket = core::row_copy_bucket(static_cast<int64_t>(row_bytes), p.total_L);
  q.candidates = &candidates();
  q.fallback = core::row_copy_cpu_default();
  TuneConfig tc;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &tc));
  const int64_t grain =
      std::max<int64_t>(1, tc.get("grain_bytes", 65536) / static_cast<int64_t>(row_bytes));
  core::parallel_for(p.total_L, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
    // Last b with offset(b) <= begin: the sequence holding row `begin` (skipping empty ones).
    int64_t lo = 0, hi = p.B - 1;
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (offset(mid) <= begin)
        lo = mid;
      else
        hi = mid - 1;
    }
    int64_t b = lo;
    int64_t seq_end = offset(b + 1);
    int64_t l = begin - offset(b);
    for (int64_t r = begin; r < end; ++r, ++l) {
      while (r >= seq_end) {  // move on to the next non-empty sequence
        ++b;
        seq_end = offset(b + 1);
        l = r - offset(b);
      }
      char* dst = out + r * p.out_row_stride * p.elem_size;
      if (l < p.S)
        std::memcpy(dst, dense + (b * p.dense_batch_stride + l * p.dense_row_stride) * p.elem_size,
                    row_bytes);
      else
        std::memset(dst, 0, row_bytes);
    }
  });
  return Status::Ok();
}

}  // namespace recops::ops
