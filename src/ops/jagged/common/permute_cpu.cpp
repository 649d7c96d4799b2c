// ops/jagged/common/permute_cpu.cpp: the CPU path of the permute ops (permute_params.h). The entry
// validated the contents (lengths >= 0 summing to N, permute in [0, T), R = the permuted sum).
// Steps: permuted_lengths row by row (the one gather from lengths); the row sums' complete cumsum
// in_off [T+1] and the permuted rows' out_off [P+1] from permuted_lengths, each a two-pass
// parallel scan over contiguous data; then threads take output rows balanced by elements plus one
// per row (select_cpu.h), so millions of tiny or empty segments spread as evenly as a few long
// ones, and copy each output row's elements of every payload (values, weights) as one contiguous
// run: in_off is read once per output row. With millions of segments of mean length < 1 the
// gathers from in_off and lengths are the cost (cache misses): the earlier order read in_off
// at random three times per row (out_off's scan and one copy pass per payload), 2.5x FBGEMM's
// time at 4M segments with weights on a 2-core Zen 1.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/jagged/common/permute_params.h"
#include "ops/jagged/common/select_cpu.h"

namespace recops::ops {
namespace {
int64_t int_at(const void* p, bool int64, int64_t i) {
  return int64 ? static_cast<const int64_t*>(p)[i] : static_cast<const int32_t*>(p)[i];
}

// (*out)[0] = 0, (*out)[i+1] = f(0) + ... + f(i) for i < n: each thread sums its chunk, then adds
// the sum of the chunks before it.
template <class F>
void complete_cumsum(int64_t n, int threads, F&& f, std::vector<int64_t>* out) {
  out->assign(static_cast<size_t>(n + 1), 0);
  const int nt = core::max_threads(threads, n >> 15);
  std::vector<int64_t> base(static_cast<size_t>(nt + 1), 0);
  int64_t* o = out->data();
  core::parallel_for(nt, 1, nt, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      int64_t s = 0;
      for (int64_t i = n * c / nt; i < n * (c + 1) / nt; ++i) o[i + 1] = s += f(i);
      base[c + 1] = s;
    }
  });
  for (int c = 0; c < nt; ++c) base[c + 1] += base[c];
  core::parallel_for(nt, 1, nt, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t i = n * c / nt; i < n * (c + 1) / nt; ++i) o[i + 1] += base[c];
  });
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
  core::parallel_for(p.P, std::max<int64_t>(1, 4096 / p.B), threads, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t t = src_row(i);
      for (int64_t b = 0; b < p.B; ++b) {
        if (p.lengths_int64)
          static_cast<int64_t*>(p.out_lengths)[i * p.B + b] = len(t, b);
        else
          static_cast<int32_t*>(p.out_lengths)[i * p.B + b] = static_cast<int32_t>(len(t, b));
      }
    }
  });
  std::vector<int64_t> in_off, out_off;
  complete_cumsum(
      p.T, threads,
      [&](int64_t t) {
        int64_t s = 0;
        for (int64_t b = 0; b < p.B; ++b) s += len(t, b);
        return s;
      },
      &in_off);
  complete_cumsum(
      p.P, threads,
      [&](int64_t i) {
        int64_t s = 0;
        for (int64_t b = 0; b < p.B; ++b) s += int_at(p.out_lengths, p.lengths_int64, i * p.B + b);
        return s;
      },
      &out_off);
  // Payloads with elements (a [R, 0] payload has nothing to copy).
  const PermutePayload* pls[2];
  int npl = 0;
  for (int k = 0; k < p.num_payloads; ++k)
    if (p.payload[k].D > 0) pls[npl++] = &p.payload[k];
  if (npl == 0) return Status::Ok();
  select_balanced_for(
      p.P, threads, [&](int64_t i) { return out_off[i] * pls[0]->D; },
      [&](int64_t i) {
        const int64_t n = out_off[i + 1] - out_off[i];
        if (n == 0) return;
        const int64_t src = in_off[src_row(i)];
        for (int k = 0; k < npl; ++k) copy_rows(*pls[k], src, out_off[i], n);
      });
  return Status::Ok();
}

}  // namespace recops::ops
