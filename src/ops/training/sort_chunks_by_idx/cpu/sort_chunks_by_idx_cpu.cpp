// training/sort_chunks_by_idx/cpu/sort_chunks_by_idx_cpu.cpp: cpu_generic. The row map
// (row_map.h) on the host, then OpenMP over output rows: each thread finds the chunk of its first
// row by binary search and memcpy's the parts of the chunks its range covers.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/memory.h"
#include "core/parallel.h"
#include "ops/training/sort_chunks_by_idx/impls.h"
#include "ops/training/sort_chunks_by_idx/row_map.h"

namespace recops::ops::sort_chunks_by_idx_ns {
namespace {
constexpr int64_t kGrainBytes = int64_t{1} << 16;  // bytes a thread moves, at least

// Moves rows [r0, r0 + n) of `from` to rows [t0, t0 + n) of `to` (rows of `bytes`).
void move(const void* from, int64_t r0, void* to, int64_t t0, int64_t n, int64_t bytes) {
  std::memcpy(static_cast<char*>(to) + t0 * bytes, static_cast<const char*>(from) + r0 * bytes,
              static_cast<size_t>(n * bytes));
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  std::vector<int64_t> ws(static_cast<size_t>(3 * p.C + 2));
  build_row_map(p.split_sizes, p.split_dtype, p.sorted_idx, p.idx_dtype, p.C, p.T, ws.data());
  const int64_t* oo = ws.data() + p.C + 1;
  const int64_t* src = ws.data() + 2 * p.C + 2;
  const int64_t rows = oo[p.C];
  // The output is usually fresh memory whose first touch (page faults) costs more than the copy
  // (README): huge pages cut the faults 512-fold where the kernel grants them (THP madvise mode).
  core::advise_huge_pages(p.to, static_cast<size_t>(p.T * p.row_bytes));
  const int64_t grain = std::max<int64_t>(1, kGrainBytes / std::max<int64_t>(1, p.row_bytes));
  core::parallel_for(rows, grain, ctx.num_threads, [&](int64_t begin, int64_t end) {
    // k: the chunk holding row `begin` (the last k with oo[k] <= begin).
    int64_t k = std::upper_bound(oo, oo + p.C + 1, begin) - oo - 1;
    for (int64_t r = begin; r < end; ++k) {
      const int64_t n = std::min(end, oo[k + 1]) - r;  // 0 for an empty chunk
      const int64_t s = src[k] + (r - oo[k]);
      // Forward: to[r..] = from[s..]; backward: to[s..] = from[r..].
      const int64_t f = p.inverse ? r : s, t = p.inverse ? s : r;
      if (n > 0) {
        move(p.from, f, p.to, t, n, p.row_bytes);
        if (p.from_probs) move(p.from_probs, f, p.to_probs, t, n, p.probs_bytes);
      }
      r += n;
    }
  });
  return Status::Ok();
}

}  // namespace recops::ops::sort_chunks_by_idx_ns
