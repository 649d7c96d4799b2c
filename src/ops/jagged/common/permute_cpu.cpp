// ops/jagged/common/permute_cpu.cpp: the CPU path of the permute ops (permute_params.h). The entry
// validated lengths (>= 0, summing to N) and permute (in [0, T)); the permuted lengths' sum is
// checked here against R before any values row is written (permute_rows_error).
// Steps: in_off [T+1], the complete cumsum of the input row sums (a parallel two-pass scan over
// contiguous data); one gather over the output rows: row i's lengths, its first input row
// src[i] = in_off[t] and its element count in_off[t+1] - in_off[t] (t = permute[i]; both in one
// cache line but for one row in eight), the counts scanned in place into out_off [P+1]; then
// threads take output rows balanced by elements plus one per row (select_cpu.h), so millions of
// tiny or empty segments spread as evenly as a few long ones, and copy each output row's elements
// of every payload (values, weights) as one contiguous run, the rows a few ahead prefetched. With
// millions of segments of mean length < 1 the random reads are the cost (cache misses): one per
// output row for in_off, one per payload. The previous order took one more for lengths and
// another for in_off in the copy pass, and the entry gathered the permuted lengths once more to
// check their sum (2.7x FBGEMM's time at 4M segments with weights on a 2-core Zen 1).
#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/permute_params.h"
#include "ops/jagged/common/select_cpu.h"

namespace recops::ops {
namespace {
int64_t int_at(const void* p, bool int64, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// n elements of E bytes each (a fixed-size memcpy per element vectorises; any dtype's bytes).
template <int E>
void copy_elems(char* d, const char* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * E, s + i * E, E);
}

void copy_run(char* d, const char* s, int64_t n, int64_t es) {
  switch (es) {
    case 1: return copy_elems<1>(d, s, n);
    case 2: return copy_elems<2>(d, s, n);
    case 4: return copy_elems<4>(d, s, n);
    case 8: return copy_elems<8>(d, s, n);
    default: std::memcpy(d, s, static_cast<size_t>(n * es));
  }
}

// Rows [src_row, src_row + len) of pl.src to rows [dst_row, ...) of pl.dst.
void copy_rows(const PermutePayload& pl, int64_t src_row, int64_t dst_row, int64_t len) {
  const int64_t es = pl.elem_size;
  const char* s = static_cast<const char*>(pl.src) + src_row * pl.src_row_stride * es;
  char* d = static_cast<char*>(pl.dst) + dst_row * pl.D * es;
  if (pl.src_row_stride == pl.D || len == 1) return copy_run(d, s, len * pl.D, es);
  for (int64_t l = 0; l < len; ++l)
    copy_run(d + l * pl.D * es, s + l * pl.src_row_stride * es, pl.D, es);
}
}  // namespace

Status permute_run_cpu(const PermuteParams& p, const Context& ctx) {
  const int threads = ctx.num_threads;
  const auto len = [&](int64_t t, int64_t b) {
    return int_at(p.lengths, p.lengths_int64, t * p.lengths_stride_t + b * p.lengths_stride_b);
  };
  const auto src_row = [&](int64_t i) {
    return int_at(p.permute, p.permute_int64, i * p.permute_stride);
  };
  // in_off [T+1]: the input rows' first elements (the lengths validated: no overflow).
  const std::unique_ptr<int64_t[]> in_off(new int64_t[static_cast<size_t>(p.T + 1)]);
  int64_t unused = 0;
  chunked_sum(
      p.T, threads,
      [&](int64_t t) {
        int64_t s = 0;
        for (int64_t b = 0; b < p.B; ++b) s += len(t, b);
        return std::pair{s, false};
      },
      in_off.get(), &unused);
  // The gather: output row i's lengths, its first input row src[i] and its element count, which
  // the scan turns into out_off [P+1].
  const std::unique_ptr<int64_t[]> out_off(new int64_t[static_cast<size_t>(p.P + 1)]);
  const std::unique_ptr<int64_t[]> src(new int64_t[static_cast<size_t>(p.P)]);
  const int64_t* io = in_off.get();
  const int64_t* oo = out_off.get();
  constexpr int64_t kAhead = 16;  // rows prefetched ahead (their random reads overlap)
  int64_t rows = 0;
  const bool ok = chunked_sum(
      p.P, threads,
      [&](int64_t i) {
        if (i + kAhead < p.P) __builtin_prefetch(io + src_row(i + kAhead));
        const int64_t t = src_row(i), first = io[t], n = io[t + 1] - first;
        src[i] = first;
        for (int64_t b = 0; b < p.B; ++b) {
          const int64_t v = p.B == 1 ? n : len(t, b);
          if (p.lengths_int64)
            static_cast<int64_t*>(p.out_lengths)[i * p.B + b] = v;
          else
            static_cast<int32_t*>(p.out_lengths)[i * p.B + b] = static_cast<int32_t>(v);
        }
        return std::pair{n, false};
      },
      out_off.get(), &rows);
  if (!ok || rows != p.R) return permute_rows_error(p.op, ok ? rows : -1, p.R);
  // Payloads with elements (a [R, 0] payload has nothing to copy).
  const PermutePayload* pls[2];
  int npl = 0;
  for (int k = 0; k < p.num_payloads; ++k)
    if (p.payload[k].D > 0) pls[npl++] = &p.payload[k];
  if (npl == 0) return Status::Ok();
  select_balanced_for(
      p.P, threads, [&](int64_t i) { return oo[i] * pls[0]->D; },
      [&](int64_t i) {
        if (i + kAhead < p.P)
          for (int k = 0; k < npl; ++k)
            __builtin_prefetch(static_cast<const char*>(pls[k]->src) +
                               src[i + kAhead] * pls[k]->src_row_stride * pls[k]->elem_size);
        const int64_t n = oo[i + 1] - oo[i];
        if (n == 0) return;
        for (int k = 0; k < npl; ++k) copy_rows(*pls[k], src[i], oo[i], n);
      });
  return Status::Ok();
}

}  // namespace recops::ops
