// block_sparse_attention reference (the golden, spec §7): for every query token the allowed keys
// A = {s : block(s) in the row's valid prefix, s < Lk, (not causal or s <= Lk - Lq + t)}, fp64
// scores, softmax and accumulation, one rounding to the output dtype; A empty gives 0 and -inf.
// Also the plain same-precision baseline of the `double` standard.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "ops/stem/block_sparse_attention/impls.h"

namespace recops::ops {
namespace {

double load(const void* base, DType t, int64_t off) {
  return t == DType::bf16 ? to_double(static_cast<const BFloat16*>(base)[off])
                          : to_double(static_cast<const Half*>(base)[off]);
}
void store(void* base, DType t, int64_t off, double x) {
  if (t == DType::bf16)
    static_cast<BFloat16*>(base)[off] = bf16_from_double(x);
  else
    static_cast<Half*>(base)[off] = half_from_double(x);
}
double round_to(DType t, double x) {
  return t == DType::bf16 ? to_double(bf16_from_double(x)) : to_double(half_from_double(x));
}

// The allowed keys of token t (in its batch) of head hq, ascending.
std::vector<int64_t> allowed_keys(const BlockSparseAttentionParams& p, int64_t b, int64_t hq,
                                  int64_t t) {
  const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b], Lk = p.Lk[b], i = t / p.Bs;
  std::vector<int64_t> keys;
  if (i >= p.Qmax) return keys;
  const int64_t L = p.row_len(b, hq, i);
  const int32_t* ids = p.row_ids(b, hq, i);
  std::vector<int64_t> blocks(ids, ids + L);
  std::sort(blocks.begin(), blocks.end());
  for (int64_t j : blocks)
    for (int64_t s = j * p.Bs; s < (j + 1) * p.Bs && s < Lk; ++s)
      if (!p.causal || s <= Lk - Lq + t) keys.push_back(s);
  return keys;
}

// Writes 0 / -inf to every output row that no batch covers (tokens past cu_q[B]).
void clear_uncovered(const BlockSparseAttentionParams& p) {
  for (int64_t tok = p.cu_q[p.B]; tok < p.Tq; ++tok)
    for (int64_t h = 0; h < p.Nq; ++h) {
      for (int64_t d = 0; d < p.D; ++d) store(p.out, p.dtype, (tok * p.Nq + h) * p.D + d, 0.0);
      p.lse[h * p.Tq + tok] = -std::numeric_limits<float>::infinity();
    }
}

// Softmax attention of every query token over its allowed keys in precision F (double: the
// golden; float: the plain baseline): the dot products summed in F, score(dot) the scaled score,
// weight(x, mx, lse, sum) the weight of a key of score x in a row of largest score mx; then the
// uncovered rows are cleared. Threads take whole (b, hq) pairs: every output element and lse is
// written by one thread with the same sequential arithmetic, so the result is bit-identical for
// any thread count.
template <class F, class Score, class Weight>
void attend(const BlockSparseAttentionParams& p, Score score, Weight weight) {
  const int64_t pairs = p.B * p.Nq;
#pragma omp parallel num_threads(core::max_threads(0, pairs))
  {
    std::vector<F> x, acc(static_cast<size_t>(p.D));
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      const int64_t b = bh / p.Nq, hq = bh % p.Nq, hk = hq / p.G;
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
      for (int64_t t = 0; t < Lq; ++t) {
        const int64_t tok = p.cu_q[b] + t;
        const std::vector<int64_t> keys = allowed_keys(p, b, hq, t);
        x.assign(keys.size(), F{0});
        F mx = -std::numeric_limits<F>::infinity();
        for (size_t n = 0; n < keys.size(); ++n) {
          F dot = 0;
          for (int64_t d = 0; d < p.D; ++d)
            dot +=
                static_cast<F>(load(p.q, p.dtype, tok * p.q_tok_stride + hq * p.q_head_stride + d) *
                               load(p.k, p.dtype, p.k_off(b, keys[n], hk) + d));
          x[n] = score(dot);
          mx = std::max(mx, x[n]);
        }
        std::fill(acc.begin(), acc.end(), F{0});
        F lse = -std::numeric_limits<F>::infinity();
        if (!keys.empty()) {
          F sum = 0;
          for (F xn : x) sum += std::exp(xn - mx);
          lse = mx + std::log(sum);
          for (size_t n = 0; n < keys.size(); ++n) {
            const F w = weight(x[n], mx, lse, sum);
            for (int64_t d = 0; d < p.D; ++d)
              acc[d] += w * static_cast<F>(load(p.v, p.dtype, p.v_off(b, keys[n], hk) + d));
          }
        }
        for (int64_t d = 0; d < p.D; ++d)
          store(p.out, p.dtype, (tok * p.Nq + hq) * p.D + d, acc[d]);
        p.lse[hq * p.Tq + tok] = static_cast<float>(lse);
      }
    }
  }
  clear_uncovered(p);
}

}  // namespace

Status block_sparse_attention_reference(const BlockSparseAttentionParams& p, const Context&) {
  attend<double>(
      p, [&](double dot) { return p.scale * dot; },
      [](double x, double, double lse, double) { return std::exp(x - lse); });
  return Status::Ok();
}

Status block_sparse_attention_plain_impl(const BlockSparseAttentionParams& p) {
  // A framework composition in the dtype: S = round(round(QKᵀ)·scale), P = round(softmax(S))
  // with an fp32 softmax, O = round(P·V) accumulated in fp32; lse from the rounded scores.
  attend<float>(
      p,
      [&](float dot) {
        return static_cast<float>(
            round_to(p.dtype, round_to(p.dtype, dot) * static_cast<float>(p.scale)));
      },
      [&](float x, float mx, float, float sum) {
        return static_cast<float>(round_to(p.dtype, std::exp(x - mx) / sum));
      });
  return Status::Ok();
}

}  // namespace recops::ops
