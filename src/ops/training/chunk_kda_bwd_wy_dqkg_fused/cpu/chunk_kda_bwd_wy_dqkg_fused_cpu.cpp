// training/chunk_kda_bwd_wy_dqkg_fused/cpu/chunk_kda_bwd_wy_dqkg_fused_cpu.cpp: the optimized CPU
// path. Work items are (chunk, key head h), split statically over threads (core::parallel_for);
// each output element is written by one item, so results do not depend on the thread count. Per
// item the chunk's q and k rows at head h are loaded once into zero-padded [R, Kp] blocks; then for
// each value head hv of h's group (in head order) its v, v_new, do, dv2 rows, G rows, β, the R×R
// block of Akk and h_c, dh_c [K, V] are loaded once, and
//   dq_t  = scale·e_t ⊙ (h_c do_t);  dk1_t = f_t ⊙ (dh_c v_new_t);  dw_t = −h_c dv2_t
//     (K·V dots, two rows t at a time: each h_c, dh_c row is read once for both)
//   ū = Akkᵀ dv2, w̄ = Akkᵀ dw                                                   (row axpys)
//   dv_t = β_t ū_t;  dβ_t = ū_t·v_t + (e_t⊙k_t)·w̄_t;  dk_t = dk1_t + β_t e_t ⊙ w̄_t
//   dG_t = q_t⊙dq_t − k_t⊙dk1_t + β_t e_t⊙k_t⊙w̄_t (+ at L: exp(G_L)⊙diag(h_c dh_cᵀ) + Σ k⊙dk1)
//   X = strict-lower(dv2 (β⊙V)ᵀ + dw (β⊙e⊙K)ᵀ) (dots), Y = Akkᵀ X (row axpys),
//   dA_ij = −Y_i·Akk_j (dots, i > j)
// with e_t = exp(G_t), f_t = exp(G_L − G_t) (exp2 with gate_log2): only exponentials of G and of
// non-positive differences are formed (training_ops.md §4.2). Dots use 8 independent partial sums
// (vectorisable). The value head's dq and dk are added to the item's group sums, stored once.
// Arithmetic: fp32 (fp64 for fp64 q).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {
namespace {

constexpr int kLanes = 8;  // partial sums per dot

int64_t round_up(int64_t n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}

// Loads n elements (dtype t, from element `from`) into dst as S, then zeros dst[n, np).
template <class S>
void load_row(const void* base, DType t, int64_t from, int64_t n, int64_t np, S* dst) {
  visit_floating(t, [&](auto tag) {
    using X = decltype(tag);
    const X* src = static_cast<const X*>(base) + from;
    if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(src[i]));
    }
  });
  for (int64_t i = n; i < np; ++i) dst[i] = S(0);
}

// Σ a_i b_i over np (a multiple of kLanes) elements, kLanes partial sums combined in order.
template <class S>
S dotp(const S* a, const S* b, int64_t np) {
  S lane[kLanes] = {};
  for (int64_t i = 0; i < np; i += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += a[i + l] * b[i + l];
  S s = 0;
  for (int l = 0; l < kLanes; ++l) s += lane[l];
  return s;
}

// y[0, np) += s · x[0, np).
template <class S>
void axpy(S s, const S* x, S* y, int64_t np) {
  for (int64_t i = 0; i < np; ++i) y[i] += s * x[i];
}

// One thread's buffers, sized for a full chunk.
template <class S>
struct Work {
  int64_t Kp, Vp, Rp;
  std::vector<S> q, k, v, vn, o, d2, g, e, ek, beta, a, hs, dhs;
  std::vector<S> dq, dk1, dw, ub, wb, x, y, dqs, dks;
  Work(int64_t BT, int64_t K, int64_t V) : Kp(round_up(K)), Vp(round_up(V)), Rp(round_up(BT)) {
    auto z = [](std::vector<S>& b, int64_t n) { b.assign(static_cast<size_t>(n), S(0)); };
    for (auto* b : {&q, &k, &g, &e, &ek, &dq, &dk1, &dw, &wb, &dqs, &dks}) z(*b, BT * Kp);
    for (auto* b : {&v, &vn, &o, &d2, &ub}) z(*b, BT * Vp);
    z(beta, BT), z(a, BT * Rp), z(x, BT * Rp), z(y, BT * Rp);
    z(hs, K * Vp), z(dhs, K * Vp);
  }
};

// Value head hv of the item (chunk ch, key head h): its dq, dk added to w.dqs, w.dks; its dv,
// dbeta, dg and dA stored.
template <class S>
void value_head(const Params& p, const training::TimeChunk& ch, int64_t hv, Work<S>& w) {
  const int64_t HV = p.HV, K = p.K, V = p.V, BT = p.BT, R = ch.rows;
  const int64_t Kp = w.Kp, Vp = w.Vp, Rp = w.Rp;
  const bool log2 = p.gate_log2;
  auto ex = [log2](S x) { return log2 ? std::exp2(x) : std::exp(x); };
  const int64_t hbase = (ch.index * HV + hv) * K * V;
  for (int64_t c = 0; c < K; ++c) {
    load_row(p.h, p.h_dtype, hbase + c * V, V, Vp, w.hs.data() + c * Vp);
    load_row(p.dh, p.dh_dtype, hbase + c * V, V, Vp, w.dhs.data() + c * Vp);
  }
  for (int64_t t = 0; t < R; ++t) {
    const int64_t row = ch.row0 + t, at = (row * HV + hv) * V;
    load_row(p.v, p.v_dtype, at, V, Vp, w.v.data() + t * Vp);
    load_row(p.v_new, p.vn_dtype, at, V, Vp, w.vn.data() + t * Vp);
    load_row(p.d_o, p.do_dtype, at, V, Vp, w.o.data() + t * Vp);
    load_row(p.dv2, p.dv2_dtype, at, V, Vp, w.d2.data() + t * Vp);
    load_row(p.g, p.g_dtype, (row * HV + hv) * K, K, Kp, w.g.data() + t * Kp);
    load_row(p.beta, p.beta_dtype, row * HV + hv, 1, 1, w.beta.data() + t);
    load_row(p.A, p.A_dtype, (row * HV + hv) * BT, R, Rp, w.a.data() + t * Rp);
  }
  const S scale = static_cast<S>(p.scale);
  const S* gL = w.g.data() + (R - 1) * Kp;
  // e and e⊙k.
  for (int64_t t = 0; t < R; ++t)
    for (int64_t c = 0; c < K; ++c) {
      w.e[t * Kp + c] = ex(w.g[t * Kp + c]);
      w.ek[t * Kp + c] = w.e[t * Kp + c] * w.k[t * Kp + c];
    }
  // The state products dq, dk1, dw, two rows t at a time: each h_c, dh_c row is read once for
  // both rows and for do and dv2 alike (the sums per output as dotp's).
  for (int64_t t = 0; t < R; t += 2) {
    const int64_t t1 = std::min(t + 1, R - 1);  // a lone last row is computed twice
    const S *o0 = w.o.data() + t * Vp, *o1 = w.o.data() + t1 * Vp;
    const S *d0 = w.d2.data() + t * Vp, *d1 = w.d2.data() + t1 * Vp;
    const S *n0 = w.vn.data() + t * Vp, *n1 = w.vn.data() + t1 * Vp;
    for (int64_t c = 0; c < K; ++c) {
      const S* hc = w.hs.data() + c * Vp;
      const S* dhc = w.dhs.data() + c * Vp;
      S q0[kLanes] = {}, q1[kLanes] = {}, w0[kLanes] = {}, w1[kLanes] = {}, k0[kLanes] = {},
        k1[kLanes] = {};
      for (int64_t i = 0; i < Vp; i += kLanes)
        for (int l = 0; l < kLanes; ++l) {
          const S a = hc[i + l], b = dhc[i + l];
          q0[l] += a * o0[i + l], q1[l] += a * o1[i + l];
          w0[l] += a * d0[i + l], w1[l] += a * d1[i + l];
          k0[l] += b * n0[i + l], k1[l] += b * n1[i + l];
        }
      S sq0 = 0, sq1 = 0, sw0 = 0, sw1 = 0, sk0 = 0, sk1 = 0;
      for (int l = 0; l < kLanes; ++l)
        sq0 += q0[l], sq1 += q1[l], sw0 += w0[l], sw1 += w1[l], sk0 += k0[l], sk1 += k1[l];
      const S sums[2][3] = {{sq0, sk0, sw0}, {sq1, sk1, sw1}};
      for (int r = 0; r < 2; ++r) {
        const int64_t tr = r ? t1 : t;
        w.dq[tr * Kp + c] = scale * w.e[tr * Kp + c] * sums[r][0];
        w.dk1[tr * Kp + c] = ex(gL[c] - w.g[tr * Kp + c]) * sums[r][1];
        w.dw[tr * Kp + c] = -sums[r][2];
      }
    }
  }
  // ū = Akkᵀ dv2, w̄ = Akkᵀ dw: row j is the sum over t (ascending) of Akk[t, j]·(row t).
  std::fill(w.ub.begin(), w.ub.begin() + R * Vp, S(0));
  std::fill(w.wb.begin(), w.wb.begin() + R * Kp, S(0));
  for (int64_t j = 0; j < R; ++j)
    for (int64_t t = 0; t < R; ++t) {
      const S a = w.a[t * Rp + j];
      axpy(a, w.d2.data() + t * Vp, w.ub.data() + j * Vp, Vp);
      axpy(a, w.dw.data() + t * Kp, w.wb.data() + j * Kp, Kp);
    }
  // dv, dβ, dk, dG.
  std::vector<S> dvrow(static_cast<size_t>(V));
  for (int64_t t = 0; t < R; ++t) {
    const int64_t row = ch.row0 + t;
    const S b = w.beta[t];
    const S* ub = w.ub.data() + t * Vp;
    const S* wb = w.wb.data() + t * Kp;
    for (int64_t i = 0; i < V; ++i) dvrow[static_cast<size_t>(i)] = b * ub[i];
    visit_floating(p.v_dtype, [&](auto tag) {
      using X = decltype(tag);
      X* d = static_cast<X*>(p.dv) + (row * HV + hv) * V;
      for (int64_t i = 0; i < V; ++i) {
        if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>)
          d[i] = static_cast<X>(dvrow[static_cast<size_t>(i)]);
        else
          d[i] = from_double<X>(static_cast<double>(dvrow[static_cast<size_t>(i)]));
      }
    });
    p.dbeta[row * HV + hv] =
        static_cast<float>(dotp(ub, w.v.data() + t * Vp, Vp) + dotp(w.ek.data() + t * Kp, wb, Kp));
    const S* q = w.q.data() + t * Kp;
    const S* k = w.k.data() + t * Kp;
    const S* e = w.e.data() + t * Kp;
    const S* ek = w.ek.data() + t * Kp;
    const S* dq = w.dq.data() + t * Kp;
    const S* dk1 = w.dk1.data() + t * Kp;
    float* dg = p.dg + (row * HV + hv) * K;
    S* dqs = w.dqs.data() + t * Kp;
    S* dks = w.dks.data() + t * Kp;
    for (int64_t c = 0; c < K; ++c) {
      dg[c] = static_cast<float>(q[c] * dq[c] - k[c] * dk1[c] + b * ek[c] * wb[c]);
      dqs[c] += dq[c];
      dks[c] += dk1[c] + b * e[c] * wb[c];
    }
  }
  // The state terms of dG at the chunk's last row L.
  {
    float* dg = p.dg + ((ch.row0 + R - 1) * HV + hv) * K;
    for (int64_t c = 0; c < K; ++c) {
      S kdk = 0;
      for (int64_t t = 0; t < R; ++t) kdk += w.k[t * Kp + c] * w.dk1[t * Kp + c];
      const S hdh = dotp(w.hs.data() + c * Vp, w.dhs.data() + c * Vp, Vp);
      dg[c] = static_cast<float>(static_cast<S>(dg[c]) + ex(gL[c]) * hdh + kdk);
    }
  }
  // dA = −Akkᵀ X Akkᵀ with X = strict-lower(dv2 (β⊙V)ᵀ + dw (β⊙e⊙K)ᵀ).
  std::fill(w.x.begin(), w.x.begin() + R * Rp, S(0));
  std::fill(w.y.begin(), w.y.begin() + R * Rp, S(0));
  for (int64_t t = 0; t < R; ++t)
    for (int64_t j = 0; j < t; ++j)
      w.x[t * Rp + j] = w.beta[j] * (dotp(w.d2.data() + t * Vp, w.v.data() + j * Vp, Vp) +
                                     dotp(w.dw.data() + t * Kp, w.ek.data() + j * Kp, Kp));
  for (int64_t i = 0; i < R; ++i)
    for (int64_t a = 0; a < R; ++a)
      axpy(w.a[a * Rp + i], w.x.data() + a * Rp, w.y.data() + i * Rp, Rp);
  for (int64_t i = 0; i < R; ++i) {
    float* dA = p.dA + ((ch.row0 + i) * HV + hv) * BT;
    for (int64_t j = 0; j < BT; ++j)
      dA[j] = j < i ? static_cast<float>(-dotp(w.y.data() + i * Rp, w.a.data() + j * Rp, Rp)) : 0.f;
  }
}

template <class S>
void fused(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const int64_t H = p.H, K = p.K, group = p.HV / H;
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Work<S> w(p.BT, K, p.V);
    const int64_t Kp = w.Kp;
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        load_row(p.q, p.q_dtype, at, K, Kp, w.q.data() + t * Kp);
        load_row(p.k, p.k_dtype, at, K, Kp, w.k.data() + t * Kp);
      }
      std::fill(w.dqs.begin(), w.dqs.begin() + R * Kp, S(0));
      std::fill(w.dks.begin(), w.dks.begin() + R * Kp, S(0));
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) value_head(p, ch, hv, w);
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        for (int64_t c = 0; c < K; ++c) {
          p.dq[at + c] = static_cast<float>(w.dqs[t * Kp + c]);
          p.dk[at + c] = static_cast<float>(w.dks[t * Kp + c]);
        }
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
  if (p.q_dtype == DType::fp64)
    fused<double>(p, chunks, ctx.num_threads);
  else
    fused<float>(p, chunks, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
