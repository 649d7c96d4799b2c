// block_sparse_attention, optimised CPU (spec §7): OpenMP over (b, hq, query block) tiles; each
// tile walks its selected key blocks in ascending id order (so the result does not depend on
// the order of the valid prefix), converts the block's K and V to fp32 once for all its query
// tokens, and updates an online softmax per token (fp32 scores in 16 fixed lanes, fp32 running
// max, sum and accumulator). Keys past Lk and, when causal, past the token's right-down diagonal
// are masked at token level; key blocks are only ever the selected ones.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/parallel.h"
#include "ops/stem/block_sparse_attention/impls.h"

namespace recops::ops {
namespace {

constexpr int kLanes = 16;

void load_row(const void* base, DType t, int64_t off, int64_t n, float* dst) {
  const auto* s = static_cast<const uint16_t*>(base) + off;
  if (t == DType::bf16) {
    for (int64_t d = 0; d < n; ++d) {
      const uint32_t u = static_cast<uint32_t>(s[d]) << 16;
      std::memcpy(dst + d, &u, 4);
    }
  } else {
    for (int64_t d = 0; d < n; ++d) dst[d] = to_float(Half{s[d]});
  }
}

float dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  const int64_t full = n / kLanes * kLanes;
  for (int64_t d = 0; d < full; d += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[d + l] * b[d + l];
  for (int64_t d = full; d < n; ++d) acc[d - full] += a[d] * b[d];
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

void store_row(void* base, DType t, int64_t off, const float* src, int64_t n) {
  auto* d = static_cast<uint16_t*>(base) + off;
  if (t == DType::bf16) {
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_from_float(src[i]).bits;
  } else {
    for (int64_t i = 0; i < n; ++i) d[i] = half_from_double(src[i]).bits;
  }
}

}  // namespace

Status block_sparse_attention_cpu(const BlockSparseAttentionParams& p, const Context& ctx) {
  const int64_t D = p.D, Bs = p.Bs;
  const float scale = static_cast<float>(p.scale);
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t tasks = p.B * p.Nq * p.Qmax;
  const int nt = core::max_threads(ctx.num_threads, tasks);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> qb, kb, vb, acc, m, l, x(static_cast<size_t>(Bs));
    std::vector<int32_t> blocks;
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t b = task / (p.Nq * p.Qmax), hq = task / p.Qmax % p.Nq, i = task % p.Qmax;
      const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b], Lk = p.Lk[b], hk = hq / p.G;
      const int64_t t0 = i * Bs, t1 = std::min(Lq, t0 + Bs), n_tok = t1 - t0;
      if (n_tok <= 0) continue;
      qb.resize(static_cast<size_t>(n_tok * D));
      acc.assign(static_cast<size_t>(n_tok * D), 0.0f);
      m.assign(static_cast<size_t>(n_tok), ninf);
      l.assign(static_cast<size_t>(n_tok), 0.0f);
      for (int64_t u = 0; u < n_tok; ++u)
        load_row(p.q, p.dtype, (p.cu_q[b] + t0 + u) * p.q_tok_stride + hq * p.q_head_stride, D,
                 qb.data() + u * D);
      const int32_t* ids = p.row_ids(b, hq, i);
      blocks.assign(ids, ids + p.row_len(b, hq, i));
      std::sort(blocks.begin(), blocks.end());
      kb.resize(static_cast<size_t>(Bs * D));
      vb.resize(static_cast<size_t>(Bs * D));
      for (int32_t j : blocks) {
        const int64_t s0 = static_cast<int64_t>(j) * Bs, n_key = std::min(Bs, Lk - s0);
        if (n_key <= 0) continue;
        // The last key any token of this tile may see (causal); skip the block if none can.
        if (p.causal && s0 > Lk - Lq + t1 - 1) continue;
        for (int64_t c = 0; c < n_key; ++c) {
          load_row(p.k, p.dtype, p.k_off(b, s0 + c, hk), D, kb.data() + c * D);
          load_row(p.v, p.dtype, p.v_off(b, s0 + c, hk), D, vb.data() + c * D);
        }
        for (int64_t u = 0; u < n_tok; ++u) {
          const int64_t t = t0 + u;
          const int64_t lim = p.causal ? std::min(n_key, Lk - Lq + t - s0 + 1) : n_key;
          if (lim <= 0) continue;
          const float* qr = qb.data() + u * D;
          float bm = ninf;
          for (int64_t c = 0; c < lim; ++c) {
            x[c] = scale * dot(qr, kb.data() + c * D, D);
            bm = std::max(bm, x[c]);
          }
          const float mn = std::max(m[u], bm);
          const float corr = m[u] == ninf ? 0.0f : std::exp(m[u] - mn);
          float* a = acc.data() + u * D;
          float sum = l[u] * corr;
          for (int64_t d = 0; d < D; ++d) a[d] *= corr;
          for (int64_t c = 0; c < lim; ++c) {
            const float w = std::exp(x[c] - mn);
            sum += w;
            const float* vr = vb.data() + c * D;
            for (int64_t d = 0; d < D; ++d) a[d] += w * vr[d];
          }
          m[u] = mn;
          l[u] = sum;
        }
      }
      for (int64_t u = 0; u < n_tok; ++u) {
        const int64_t tok = p.cu_q[b] + t0 + u;
        float* a = acc.data() + u * D;
        // A row with keys has l > 0, or l = NaN when a score or value is non-finite: both take
        // this branch, so NaN reaches the output and lse as in the reference. Only a row with no
        // key (l = 0) is 0 with lse -inf.
        if (!(l[u] == 0)) {
          const float inv = 1.0f / l[u];
          for (int64_t d = 0; d < D; ++d) a[d] *= inv;
          p.lse[hq * p.Tq + tok] = m[u] + std::log(l[u]);
        } else {
          std::fill(a, a + D, 0.0f);
          p.lse[hq * p.Tq + tok] = ninf;
        }
        store_row(p.out, p.dtype, (tok * p.Nq + hq) * D, a, D);
      }
    }
    // Rows no batch covers (tokens past cu_q[B]).
#pragma omp for schedule(static)
    for (int64_t tok = p.cu_q[p.B]; tok < p.Tq; ++tok)
      for (int64_t h = 0; h < p.Nq; ++h) {
        std::vector<float> zero(static_cast<size_t>(D), 0.0f);
        store_row(p.out, p.dtype, (tok * p.Nq + h) * D, zero.data(), D);
        p.lse[h * p.Tq + tok] = ninf;
      }
  }
  return Status::Ok();
}

}  // namespace recops::ops
