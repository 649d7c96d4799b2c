// block_sparse_attention reference (the golden, spec §7): for every query token the allowed keys
// A = {s : block(s) in the row's valid prefix, s < Lk, (not causal or s <= Lk - Lq + t)}, fp64
// scores, softmax and accumulation, one rounding to the output dtype; A empty gives 0 and -inf.
// Also the plain same-precision baseline of the `double` standard.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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

}  // namespace

Status block_sparse_attention_reference(const BlockSparseAttentionParams& p, const Context&) {
  // Threads take whole (b, hq) pairs: every output element and lse is written by one thread with
  // the same sequential arithmetic, so the golden is bit-identical for any thread count.
  const int64_t pairs = p.B * p.Nq;
#pragma omp parallel
  {
    std::vector<double> x, acc(static_cast<size_t>(p.D));
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      const int64_t b = bh / p.Nq, hq = bh % p.Nq, hk = hq / p.G;
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
      for (int64_t t = 0; t < Lq; ++t) {
        const int64_t tok = p.cu_q[b] + t;
        const std::vector<int64_t> keys = allowed_keys(p, b, hq, t);
        x.assign(keys.size(), 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        for (size_t n = 0; n < keys.size(); ++n) {
          double dot = 0;
          for (int64_t d = 0; d < p.D; ++d)
            dot += load(p.q, p.dtype, tok * p.q_tok_stride + hq * p.q_head_stride + d) *
                   load(p.k, p.dtype, p.k_off(b, keys[n], hk) + d);
          x[n] = p.scale * dot;
          mx = std::max(mx, x[n]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double lse = -std::numeric_limits<double>::infinity();
        if (!keys.empty()) {
          double sum = 0;
          for (double xn : x) sum += std::exp(xn - mx);
          lse = mx + std::log(sum);
          for (size_t n = 0; n < keys.size(); ++n) {
            const double w = std::exp(x[n] - lse);
            for (int64_t d = 0; d < p.D; ++d)
              acc[d] += w * load(p.v, p.dtype, p.v_off(b, keys[n], hk) + d);
          }
        }
        for (int64_t d = 0; d < p.D; ++d)
          store(p.out, p.dtype, (tok * p.Nq + hq) * p.D + d, acc[d]);
        p.lse[hq * p.Tq + tok] = static_cast<float>(lse);
      }
    }
  }
  clear_uncovered(p);
  return Status::Ok();
}

Status block_sparse_attention_plain_impl(const BlockSparseAttentionParams& p) {
  // A framework composition in the dtype: S = round(round(QKᵀ)·scale), P = round(softmax(S))
  // with an fp32 softmax, O = round(P·V) accumulated in fp32; lse from the rounded scores.
  // Threads take whole (b, hq) pairs, as in the reference (bit-identical for any thread count).
  const int64_t pairs = p.B * p.Nq;
#pragma omp parallel
  {
    std::vector<float> s;
    std::vector<float> acc(static_cast<size_t>(p.D));
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < pairs; ++bh) {
      const int64_t b = bh / p.Nq, hq = bh % p.Nq, hk = hq / p.G;
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b];
      for (int64_t t = 0; t < Lq; ++t) {
        const int64_t tok = p.cu_q[b] + t;
        const std::vector<int64_t> keys = allowed_keys(p, b, hq, t);
        s.assign(keys.size(), 0.0f);
        float mx = -std::numeric_limits<float>::infinity();
        for (size_t n = 0; n < keys.size(); ++n) {
          float dot = 0;
          for (int64_t d = 0; d < p.D; ++d)
            dot += static_cast<float>(
                load(p.q, p.dtype, tok * p.q_tok_stride + hq * p.q_head_stride + d) *
                load(p.k, p.dtype, p.k_off(b, keys[n], hk) + d));
          s[n] = static_cast<float>(
              round_to(p.dtype, round_to(p.dtype, dot) * static_cast<float>(p.scale)));
          mx = std::max(mx, s[n]);
        }
        std::fill(acc.begin(), acc.end(), 0.0f);
        float lse = -std::numeric_limits<float>::infinity();
        if (!keys.empty()) {
          float sum = 0;
          for (float x : s) sum += std::exp(x - mx);
          lse = mx + std::log(sum);
          for (size_t n = 0; n < keys.size(); ++n) {
            const float w = static_cast<float>(round_to(p.dtype, std::exp(s[n] - mx) / sum));
            for (int64_t d = 0; d < p.D; ++d)
              acc[d] += w * static_cast<float>(load(p.v, p.dtype, p.v_off(b, keys[n], hk) + d));
          }
        }
        for (int64_t d = 0; d < p.D; ++d)
          store(p.out, p.dtype, (tok * p.Nq + hq) * p.D + d, acc[d]);
        p.lse[hq * p.Tq + tok] = lse;
      }
    }
  }
  clear_uncovered(p);
  return Status::Ok();
}

}  // namespace recops::ops
