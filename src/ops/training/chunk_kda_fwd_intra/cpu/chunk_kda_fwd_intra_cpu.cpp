// training/chunk_kda_fwd_intra/cpu/chunk_kda_fwd_intra_cpu.cpp: the optimized CPU path. Work items
// are (chunk, value head hv), split statically over the threads; each output element comes from
// one item, so results do not depend on the thread count. Per item the chunk's q, k (key head
// hv / (HV / H)), G and beta rows are widened once; the scores Aqk and M follow training_ops.md
// §4.5's sub-block factorisation: the chunk is cut into 16-row sub-blocks; for a row block I
// starting at row r and a column j < r of an earlier block, exp(G_i − G_j) = exp(G_i − G_r) ·
// exp(G_r − G_j), both exponents ≤ 0, so q_i, k_i are scaled by the first factor, k_j by the
// second, and the score is a plain K-long dot; inside a diagonal sub-block exp(G_i − G_j), j ≤ i,
// is formed per pair. Akk = (I + M)^-1 by row-wise forward substitution; w = Akk (β k e(G)) and
// u = Akk (β v) accumulated along the row; kg, qg elementwise.
// Arithmetic: fp32 (fp64 when k is fp64), like the double standard's plain baseline.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_kda_fwd_intra/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_fwd_intra_ns {
namespace {

constexpr int64_t kSub = 16;  // sub-block rows (fla's BC)

// Element i of a floating tensor of dtype t as S: a runtime switch, read O(R·D) times per item
// against the O(R²·K) products.
template <class S>
S load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(to_float(static_cast<const Half*>(base)[i]));
    default: return static_cast<S>(to_float(static_cast<const BFloat16*>(base)[i]));
  }
}

// x rounded once into element i of a floating tensor of dtype t.
template <class S>
void store_as(void* base, DType t, int64_t i, S x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = static_cast<double>(x); break;
    case DType::fp32: static_cast<float*>(base)[i] = static_cast<float>(x); break;
    case DType::fp16:
      static_cast<Half*>(base)[i] = from_double<Half>(static_cast<double>(x));
      break;
    default: static_cast<BFloat16*>(base)[i] = from_double<BFloat16>(static_cast<double>(x));
  }
}

// The per-thread scratch of one item.
template <class S>
struct Scratch {
  std::vector<S> q, k, g, beta, xs_q, xs_k, xt, aqk, m, akk, x, acc;
  Scratch(int64_t BT, int64_t K, int64_t V) {
    const auto n = [](int64_t a) { return static_cast<size_t>(a); };
    for (auto* b : {&q, &k, &g, &xs_q, &xs_k, &xt}) b->resize(n(BT * K));  // xt: [K, BT]
    beta.resize(n(BT));
    for (auto* b : {&aqk, &m, &akk}) b->resize(n(BT * BT));
    x.resize(n(BT * std::max(K, V)));
    acc.resize(n(std::max(K, V)));
  }
};

template <class S>
void item(const Params& p, const training::TimeChunk& ch, int64_t hv, Scratch<S>& s) {
  const int64_t HV = p.HV, K = p.K, V = p.V, BT = p.BT, R = ch.rows;
  const int64_t h = hv / (HV / p.H);
  const bool log2 = p.gate_log2;
  auto e = [log2](S x) { return log2 ? std::exp2(x) : std::exp(x); };
  const S scale = static_cast<S>(p.scale);
  for (int64_t i = 0; i < R; ++i) {
    const int64_t r = ch.row0 + i;
    for (int64_t d = 0; d < K; ++d) {
      s.q[i * K + d] = load_as<S>(p.q, p.q_dtype, (r * p.H + h) * K + d);
      s.k[i * K + d] = load_as<S>(p.k, p.k_dtype, (r * p.H + h) * K + d);
      s.g[i * K + d] = load_as<S>(p.g, p.g_dtype, (r * HV + hv) * K + d);
    }
    s.beta[i] = load_as<S>(p.beta, p.beta_dtype, r * HV + hv);
  }
  std::fill(s.aqk.begin(), s.aqk.end(), S(0));
  std::fill(s.m.begin(), s.m.end(), S(0));
  // Scores, one 16-row block I = [r0, r1) at a time.
  for (int64_t r0 = 0; r0 < R; r0 += kSub) {
    const int64_t r1 = std::min(R, r0 + kSub);
    const S* gr = s.g.data() + r0 * K;
    // Diagonal sub-block: exp(G_i − G_j), j ≤ i, per pair.
    for (int64_t i = r0; i < r1; ++i) {
      const S* qi = s.q.data() + i * K;
      const S* ki = s.k.data() + i * K;
      const S* gi = s.g.data() + i * K;
      for (int64_t j = r0; j <= i; ++j) {
        const S* kj = s.k.data() + j * K;
        const S* gj = s.g.data() + j * K;
        S sq = 0, sk = 0;
        for (int64_t d = 0; d < K; ++d) {
          const S f = e(gi[d] - gj[d]) * kj[d];
          sq += qi[d] * f;
          sk += ki[d] * f;
        }
        s.aqk[i * BT + j] = scale * sq;
        if (j < i) s.m[i * BT + j] = s.beta[i] * sk;
      }
    }
    if (r0 == 0) continue;
    // Earlier columns j < r0: rows scaled by exp(G_i − G_r0), columns by exp(G_r0 − G_j).
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t d = 0; d < K; ++d) {
        const S f = e(s.g[i * K + d] - gr[d]);
        s.xs_q[i * K + d] = s.q[i * K + d] * f;
        s.xs_k[i * K + d] = s.k[i * K + d] * f;
      }
    // The column factors stored transposed, xt[d, j] (j < r0), so that each score row is
    // accumulated along j (contiguous lanes) in the order d = 0, 1, ... of a plain dot.
    for (int64_t j = 0; j < r0; ++j)
      for (int64_t d = 0; d < K; ++d) s.xt[d * BT + j] = s.k[j * K + d] * e(gr[d] - s.g[j * K + d]);
    for (int64_t i = r0; i < r1; ++i) {
      S* __restrict aq = s.aqk.data() + i * BT;
      S* __restrict am = s.m.data() + i * BT;
      const S* xq = s.xs_q.data() + i * K;
      const S* xk = s.xs_k.data() + i * K;
      for (int64_t d = 0; d < K; ++d) {
        const S a = xq[d], c = xk[d];
        const S* __restrict xt = s.xt.data() + d * BT;
        for (int64_t j = 0; j < r0; ++j) {
          aq[j] += a * xt[j];
          am[j] += c * xt[j];
        }
      }
      for (int64_t j = 0; j < r0; ++j) {
        aq[j] *= scale;
        am[j] *= s.beta[i];
      }
    }
  }
  // Akk = (I + M)^-1 row by row: X_i = e_i − Σ_{j<i} M_ij X_j (X_j zero past column j).
  std::fill(s.akk.begin(), s.akk.end(), S(0));
  for (int64_t i = 0; i < R; ++i) {
    S* xi = s.akk.data() + i * BT;
    for (int64_t j = 0; j < i; ++j) {
      const S mij = s.m[i * BT + j];
      const S* xj = s.akk.data() + j * BT;
      for (int64_t c = 0; c <= j; ++c) xi[c] -= mij * xj[c];
    }
    xi[i] = 1;
  }
  // Aqk, Akk rows (columns past the chunk's R rows stay 0).
  for (int64_t i = 0; i < R; ++i) {
    const int64_t ra = ((ch.row0 + i) * HV + hv) * BT;
    float* akk = static_cast<float*>(p.Akk) + ra;
    for (int64_t j = 0; j < BT; ++j) {
      store_as<S>(p.Aqk, p.k_dtype, ra + j, s.aqk[i * BT + j]);
      akk[j] = static_cast<float>(s.akk[i * BT + j]);
    }
  }
  // out row i = Σ_{j ≤ i} Akk_ij x_j over D-long rows x (lower triangular Akk).
  auto product = [&](int64_t D, void* out, DType t) {
    for (int64_t i = 0; i < R; ++i) {
      S* __restrict acc = s.acc.data();
      std::fill(acc, acc + D, S(0));
      for (int64_t j = 0; j <= i; ++j) {
        const S a = s.akk[i * BT + j];
        const S* __restrict xj = s.x.data() + j * D;
        for (int64_t d = 0; d < D; ++d) acc[d] += a * xj[d];
      }
      const int64_t o = ((ch.row0 + i) * HV + hv) * D;
      for (int64_t d = 0; d < D; ++d) store_as<S>(out, t, o + d, acc[d]);
    }
  };
  // w from x_j = β_j k_j e(G_j); qg, kg elementwise (G_{R−1} the chunk's last valid row).
  const S* gl = s.g.data() + (R - 1) * K;
  for (int64_t j = 0; j < R; ++j) {
    const int64_t o = ((ch.row0 + j) * HV + hv) * K;
    for (int64_t d = 0; d < K; ++d) {
      const S gd = s.g[j * K + d];
      const S eg = e(gd);
      s.x[j * K + d] = s.beta[j] * s.k[j * K + d] * eg;
      store_as<S>(p.qg, p.q_dtype, o + d, s.q[j * K + d] * eg);
      store_as<S>(p.kg, p.k_dtype, o + d, s.k[j * K + d] * e(gl[d] - gd));
    }
  }
  product(K, p.w, p.k_dtype);
  // u from x_j = β_j v_j.
  for (int64_t j = 0; j < R; ++j) {
    const int64_t o = ((ch.row0 + j) * HV + hv) * V;
    for (int64_t d = 0; d < V; ++d) s.x[j * V + d] = s.beta[j] * load_as<S>(p.v, p.v_dtype, o + d);
  }
  product(V, p.u, p.v_dtype);
}

template <class S>
void apply(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const int64_t items = static_cast<int64_t>(chunks.size()) * p.HV;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Scratch<S> s(p.BT, p.K, p.V);
    for (int64_t it = begin; it < end; ++it)
      item<S>(p, chunks[static_cast<size_t>(it / p.HV)], it % p.HV, s);
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (p.HV == 0) return Status::Ok();
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  if (p.k_dtype == DType::fp64)
    apply<double>(p, chunks, ctx.num_threads);
  else
    apply<float>(p, chunks, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
