// training/chunk_fwd_o/cpu/chunk_fwd_o_cpu.cpp: the optimized CPU path. Work items are (chunk,
// key head h). Per item the chunk's q and k rows at head h are widened once into dense [rows, K]
// blocks and the lower triangle (diagonal included) of q·kᵀ is formed with 8 independent partial
// sums per dot (vectorisable); then each value head hv of h's group (GVA: hv / (HV / H) = h)
// widens its state h_c [K, V] and its v_new rows once and forms each output row as
//   o_t = scale·exp(G_t)·Σ_c q_tc·h_c[c, :]  +  Σ_{j ≤ t} (scale·exp(G_t − G_j)·(q_t·k_j))·v_j
// with row axpys over V (vectorisable). Only exponentials of G_t and of non-positive differences
// G_t − G_j (j ≤ t) are formed (training_ops.md §4.2 Numerics). Arithmetic: fp32 (fp64 for fp64
// q), like the double standard's plain baseline; items are split statically, each output row from
// one item, so results do not depend on the thread count. With gk (KDA's per-channel gate) the
// items are (chunk, value head): fwd_o_gk below.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_fwd_o/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_fwd_o_ns {
namespace {

constexpr int kLanes = 8;  // partial sums per dot

// dst[0, n) = the n elements of a floating tensor (dtype t) from element `at`, as S.
template <class S>
void widen(const void* base, DType t, int64_t at, int64_t n, S* dst) {
  switch (t) {
    case DType::fp64: {
      const double* s = static_cast<const double*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(s[i]);
      break;
    }
    case DType::fp32: {
      const float* s = static_cast<const float*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(s[i]);
      break;
    }
    case DType::fp16: {
      const Half* s = static_cast<const Half*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(s[i]));
      break;
    }
    default: {
      const BFloat16* s = static_cast<const BFloat16*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(s[i]));
      break;
    }
  }
}

template <class S>
S gate_exp(S x, bool log2) {
  return log2 ? std::exp2(x) : std::exp(x);
}

// Σ_d a[d]·b[d] over n elements with kLanes independent partial sums (vectorisable), the tail
// into lane 0; the lanes combined in order.
template <class S>
S dot_lanes(const S* a, const S* b, int64_t n) {
  S part[kLanes] = {};
  int64_t d = 0;
  for (; d + kLanes <= n; d += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += a[d + l] * b[d + l];
  for (; d < n; ++d) part[0] += a[d] * b[d];
  S dot = 0;
  for (int l = 0; l < kLanes; ++l) dot += part[l];
  return dot;
}

// acc[0, V) = Σ_c x[c]·hs[c, :] (x: K values, hs: the state [K, V]) as row axpys over V.
template <class S>
void state_row(const S* x, const S* hs, int64_t K, int64_t V, S* acc) {
  std::fill(acc, acc + V, S(0));
  for (int64_t c = 0; c < K; ++c) {
    const S xc = x[c];
    const S* hr = hs + c * V;
    for (int64_t v = 0; v < V; ++v) acc[v] += xc * hr[v];
  }
}

// dst[0, n) = a[0, n) rounded once to o's type TO.
template <class S, class TO>
void store_row(const S* a, int64_t n, TO* dst) {
  for (int64_t v = 0; v < n; ++v) {
    if constexpr (std::is_same_v<TO, double> || std::is_same_v<TO, float>)
      dst[v] = static_cast<TO>(a[v]);
    else
      dst[v] = from_double<TO>(static_cast<double>(a[v]));
  }
}

// S: the arithmetic type; TO: the C++ type of o (= q's).
template <class S, class TO>
void fwd_o(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  TO* o = static_cast<TO*>(p.o);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const int64_t Kp = (K + kLanes - 1) / kLanes * kLanes;  // padded row of the q and k blocks
  const S scale = static_cast<S>(p.scale);
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> qb(static_cast<size_t>(BT * Kp)), kb(static_cast<size_t>(BT * Kp));
    std::vector<S> qk(static_cast<size_t>(BT * BT)), hs(static_cast<size_t>(K * V));
    std::vector<S> vs(static_cast<size_t>(BT * V)), acc(static_cast<size_t>(V));
    std::vector<S> gt(static_cast<size_t>(BT));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        widen(p.q, p.q_dtype, at, K, qb.data() + t * Kp);
        widen(p.k, p.k_dtype, at, K, kb.data() + t * Kp);
        std::fill(qb.begin() + t * Kp + K, qb.begin() + (t + 1) * Kp, S(0));
        std::fill(kb.begin() + t * Kp + K, kb.begin() + (t + 1) * Kp, S(0));
      }
      // q_t·k_j for j ≤ t.
      for (int64_t t = 0; t < R; ++t) {
        const S* qt = qb.data() + t * Kp;
        for (int64_t j = 0; j <= t; ++j) qk[t * BT + j] = dot_lanes(qt, kb.data() + j * Kp, Kp);
      }
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        widen(p.h, p.h_dtype, (ch.index * HV + hv) * K * V, K * V, hs.data());
        for (int64_t t = 0; t < R; ++t) {
          widen(p.v, p.v_dtype, ((ch.row0 + t) * HV + hv) * V, V, vs.data() + t * V);
          if (p.g) widen(p.g, p.g_dtype, (ch.row0 + t) * HV + hv, 1, gt.data() + t);
        }
        for (int64_t t = 0; t < R; ++t) {
          S* a = acc.data();
          state_row(qb.data() + t * Kp, hs.data(), K, V, a);
          const S f = p.g ? scale * gate_exp(gt[t], p.gate_log2) : scale;
          for (int64_t v = 0; v < V; ++v) a[v] *= f;
          for (int64_t j = 0; j <= t; ++j) {
            const S w = p.g ? scale * gate_exp(gt[t] - gt[j], p.gate_log2) * qk[t * BT + j]
                            : scale * qk[t * BT + j];
            const S* vj = vs.data() + j * V;
            for (int64_t v = 0; v < V; ++v) a[v] += w * vj[v];
          }
          store_row(a, V, o + ((ch.row0 + t) * HV + hv) * V);
        }
      }
    }
  });
}

// With gk (KDA's per-channel G [B, T, HV, K], training_ops.md §4.5): the exponent does not factor
// out of the channel sum, so the scores depend on the value head and work items are (chunk, value
// head hv). The scores A_tj = scale·Σ_d q_td k_jd exp(G_td − G_jd), j ≤ t, follow §4.5's
// sub-block split (as chunk_kda_fwd_intra's CPU path): the chunk is cut into 16-row sub-blocks;
// for rows t of the block starting at row r and columns j < r,
// exp(G_td − G_jd) = exp(G_td − G_rd)·exp(G_rd − G_jd), both exponents ≤ 0, so q_t is scaled by
// the first factor, k_j by the second and the score is a plain K-long dot; inside the diagonal
// sub-block exp(G_td − G_jd) is formed per pair. Then
//   o_t = scale·Σ_c q_tc·exp(G_tc)·h_c[c, :] + Σ_{j ≤ t} A_tj·v_j.
constexpr int64_t kSub = 16;  // sub-block rows (fla's BC)

template <class S, class TO>
void fwd_o_gk(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  TO* o = static_cast<TO*>(p.o);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const S scale = static_cast<S>(p.scale);
  const bool log2 = p.gate_log2;
  const int64_t items = static_cast<int64_t>(chunks.size()) * HV;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> qb(static_cast<size_t>(BT * K)), kb(static_cast<size_t>(BT * K));
    std::vector<S> gb(static_cast<size_t>(BT * K)), xq(static_cast<size_t>(BT * K));
    std::vector<S> xk(static_cast<size_t>(BT * K)), a(static_cast<size_t>(BT * BT));
    std::vector<S> hs(static_cast<size_t>(K * V)), vs(static_cast<size_t>(BT * V));
    std::vector<S> acc(static_cast<size_t>(V));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / HV)];
      const int64_t hv = item % HV, h = hv / group, R = ch.rows;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        widen(p.q, p.q_dtype, at, K, qb.data() + t * K);
        widen(p.k, p.k_dtype, at, K, kb.data() + t * K);
        widen(p.gk, p.gk_dtype, ((ch.row0 + t) * HV + hv) * K, K, gb.data() + t * K);
      }
      // Scores, one 16-row block [r0, r1) at a time.
      for (int64_t r0 = 0; r0 < R; r0 += kSub) {
        const int64_t r1 = std::min(R, r0 + kSub);
        const S* gr = gb.data() + r0 * K;
        // The diagonal sub-block: exp(G_td − G_jd), j ≤ t, per pair.
        for (int64_t t = r0; t < r1; ++t) {
          const S* qt = qb.data() + t * K;
          const S* gt = gb.data() + t * K;
          for (int64_t j = r0; j <= t; ++j) {
            const S* kj = kb.data() + j * K;
            const S* gj = gb.data() + j * K;
            S dot = 0;
            for (int64_t d = 0; d < K; ++d) dot += qt[d] * kj[d] * gate_exp(gt[d] - gj[d], log2);
            a[t * BT + j] = scale * dot;
          }
        }
        if (r0 == 0) continue;
        // Earlier columns j < r0: rows scaled by exp(G_t − G_r0), columns by exp(G_r0 − G_j).
        for (int64_t t = r0; t < r1; ++t)
          for (int64_t d = 0; d < K; ++d)
            xq[t * K + d] = qb[t * K + d] * gate_exp(gb[t * K + d] - gr[d], log2);
        for (int64_t j = 0; j < r0; ++j)
          for (int64_t d = 0; d < K; ++d)
            xk[j * K + d] = kb[j * K + d] * gate_exp(gr[d] - gb[j * K + d], log2);
        for (int64_t t = r0; t < r1; ++t) {
          const S* xt = xq.data() + t * K;
          for (int64_t j = 0; j < r0; ++j)
            a[t * BT + j] = scale * dot_lanes(xt, xk.data() + j * K, K);
        }
      }
      // q_t ⊙ exp(G_t) in place (the scores are formed).
      for (int64_t i = 0; i < R * K; ++i) qb[i] *= gate_exp(gb[i], log2);
      widen(p.h, p.h_dtype, (ch.index * HV + hv) * K * V, K * V, hs.data());
      for (int64_t t = 0; t < R; ++t)
        widen(p.v, p.v_dtype, ((ch.row0 + t) * HV + hv) * V, V, vs.data() + t * V);
      for (int64_t t = 0; t < R; ++t) {
        S* ac = acc.data();
        state_row(qb.data() + t * K, hs.data(), K, V, ac);
        for (int64_t v = 0; v < V; ++v) ac[v] *= scale;
        for (int64_t j = 0; j <= t; ++j) {
          const S w = a[t * BT + j];
          const S* vj = vs.data() + j * V;
          for (int64_t v = 0; v < V; ++v) ac[v] += w * vj[v];
        }
        store_row(ac, V, o + ((ch.row0 + t) * HV + hv) * V);
      }
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  // Chunk c of all sequences is h[0, c] with offsets; without them NT = ceil(T / BT) exactly
  // (the entry checks), so chunk c of row b, h[b, c], has the running number b·NT + c.
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  bool ok = false;
  visit_floating(p.q_dtype, [&](auto tq) {
    using TQ = decltype(tq);
    using S = std::conditional_t<std::is_same_v<TQ, double>, double, float>;
    if (p.gk)
      fwd_o_gk<S, TQ>(p, chunks, ctx.num_threads);
    else
      fwd_o<S, TQ>(p, chunks, ctx.num_threads);
    ok = true;
  });
  if (!ok) return Status(StatusCode::internal, "chunk_fwd_o: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_fwd_o_ns
