// training/chunk_kda_bwd_wy_dqkg_fused/reference.cpp: the golden (accuracy.md): training_ops.md
// §4.5's formulas (§4.3's chunk_bwd_dqkwg state terms and wy_fast w/u terms with each scalar
// decay replaced by the per-channel one) in fp64 (the inputs widened to fp64 once), written out
// per element. For each chunk (first position c0, last L, R rows), value head hv (key head
// h = hv / (HV / H)), rows i, t, j of the chunk and channels c:
//   e[i, c] = exp(G[i, c]),  f[i, c] = exp(G[L, c] − G[i, c])                 (exp2: gate_log2)
//   dq_hv[i, c] = scale · e[i, c] · Σ_v h_c[c, v] · do[i, v]
//   dk1[i, c]   = f[i, c] · Σ_v dh_c[c, v] · v_new[i, v]
//   dw[i, c]    = −Σ_v h_c[c, v] · dv2[i, v]
//   ū[j, v] = Σ_t Akk[t, j] · dv2[t, v];   w̄[j, c] = Σ_t Akk[t, j] · dw[t, c]
//   dv[i, v]    = β_i · ū[i, v]
//   dk_hv[i, c] = dk1[i, c] + β_i · e[i, c] · w̄[i, c]
//   dβ[i]       = Σ_v ū[i, v] · v[i, v] + Σ_c e[i, c] · k[i, c] · w̄[i, c]
//   dg[i, c]    = q[i, c] · dq_hv[i, c] − k[i, c] · dk1[i, c] + β_i · e[i, c] · k[i, c] · w̄[i, c]
//                 + [i = L] · (exp(G[L, c]) · Σ_v h_c[c, v] · dh_c[c, v] + Σ_t k[t, c] · dk1[t, c])
//   X[t, j]     = [t > j] · β_j · (Σ_v dv2[t, v] · v[j, v] + Σ_c dw[t, c] · e[j, c] · k[j, c])
//   dA[i, j]    = [i > j] · −Σ_{a, b} Akk[a, i] · X[a, b] · Akk[j, b]   (0 elsewhere)
//   dq[i, h] = Σ over the group's value heads of dq_hv (in head order), dk likewise.
// Akk's whole R×R block of the chunk is read (the upper part too, as fla's dense products do).
// With p.plain, the double standard's plain baseline: the same loops with S = fp32 (fp64 for fp64
// q), outputs rounded once. Includes params.h and the goldens' own common/gdn_golden.h (which no
// cpu/ code includes); shares no code with cpu/.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {
namespace {
using training::golden::offset_value;
using training::golden::widened;
using training::golden::write_rounded;

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
class Golden {
 public:
  explicit Golden(const Params& p)
      : p_(p),
        q_(widened(p.q, p.q_dtype, p.B * p.T * p.H * p.K)),
        k_(widened(p.k, p.k_dtype, p.B * p.T * p.H * p.K)),
        v_(widened(p.v, p.v_dtype, p.B * p.T * p.HV * p.V)),
        vn_(widened(p.v_new, p.vn_dtype, p.B * p.T * p.HV * p.V)),
        g_(widened(p.g, p.g_dtype, p.B * p.T * p.HV * p.K)),
        beta_(widened(p.beta, p.beta_dtype, p.B * p.T * p.HV)),
        A_(widened(p.A, p.A_dtype, p.B * p.T * p.HV * p.BT)),
        h_(widened(p.h, p.h_dtype, p.B * p.NT * p.HV * p.K * p.V)),
        do_(widened(p.d_o, p.do_dtype, p.B * p.T * p.HV * p.V)),
        dh_(widened(p.dh, p.dh_dtype, p.B * p.NT * p.HV * p.K * p.V)),
        dv2_(widened(p.dv2, p.dv2_dtype, p.B * p.T * p.HV * p.V)) {}

  void run() {
    const Params& p = p_;
    const size_t nqk = static_cast<size_t>(p.B * p.T * p.H * p.K);
    dq_.assign(nqk, S(0));
    dk_.assign(nqk, S(0));
    dv_.assign(static_cast<size_t>(p.B * p.T * p.HV * p.V), S(0));
    dbeta_.assign(static_cast<size_t>(p.B * p.T * p.HV), S(0));
    dg_.assign(static_cast<size_t>(p.B * p.T * p.HV * p.K), S(0));
    dA_.assign(static_cast<size_t>(p.B * p.T * p.HV * p.BT), S(0));
    int64_t chunk_base = 0;  // with offsets: the index in h of sequence n's first chunk
    for (int64_t n = 0; n < p.N; ++n) {
      const int64_t b = p.seq_offsets ? 0 : n;
      const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
      const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
      for (int64_t c0 = first, ci = 0; c0 < last; c0 += p.BT, ++ci) {
        const int64_t L = std::min(c0 + p.BT, last) - 1;
        const int64_t hc = p.seq_offsets ? chunk_base + ci : ci;
        for (int64_t hv = 0; hv < p.HV; ++hv) chunk(b * p.T + c0, b * p.T + L, hc + b * p.NT, hv);
      }
      if (p.seq_offsets) chunk_base += (last - first + p.BT - 1) / p.BT;
    }
    write_rounded(dq_, p.dq, DType::fp32);
    write_rounded(dk_, p.dk, DType::fp32);
    write_rounded(dv_, p.dv, p.v_dtype);
    write_rounded(dbeta_, p.dbeta, DType::fp32);
    write_rounded(dg_, p.dg, DType::fp32);
    write_rounded(dA_, p.dA, DType::fp32);
  }

 private:
  static S at(const std::vector<double>& x, int64_t i) {
    return static_cast<S>(x[static_cast<size_t>(i)]);
  }
  S ex(S x) const { return p_.gate_log2 ? std::exp2(x) : std::exp(x); }
  // Flattened row r (= b·T + t) of the value-head tensors, head hv, element e.
  S G(int64_t r, int64_t hv, int64_t c) const { return at(g_, (r * p_.HV + hv) * p_.K + c); }
  S Q(int64_t r, int64_t h, int64_t c) const { return at(q_, (r * p_.H + h) * p_.K + c); }
  S Kx(int64_t r, int64_t h, int64_t c) const { return at(k_, (r * p_.H + h) * p_.K + c); }
  S Vx(const std::vector<double>& x, int64_t r, int64_t hv, int64_t v) const {
    return at(x, (r * p_.HV + hv) * p_.V + v);
  }
  S Beta(int64_t r, int64_t hv) const { return at(beta_, r * p_.HV + hv); }
  // Akk[row r, chunk column j].
  S Akk(int64_t r, int64_t hv, int64_t j) const { return at(A_, (r * p_.HV + hv) * p_.BT + j); }

  // Chunk rows [r0, rL] (flattened), h's chunk hs (flattened over B and NT), value head hv.
  void chunk(int64_t r0, int64_t rL, int64_t hs, int64_t hv) {
    const Params& p = p_;
    const int64_t h = hv / (p.HV / p.H), R = rL - r0 + 1, K = p.K, V = p.V;
    const int64_t hbase = (hs * p.HV + hv) * K * V;
    auto H = [&](int64_t c, int64_t v) { return at(h_, hbase + c * V + v); };
    auto dH = [&](int64_t c, int64_t v) { return at(dh_, hbase + c * V + v); };
    auto idx = [](int64_t a, int64_t b, int64_t n) { return static_cast<size_t>(a * n + b); };
    const S sc = static_cast<S>(p.scale);
    // The per-row products with the state, each from the inputs.
    std::vector<S> dqh(idx(R, 0, K)), dk1(idx(R, 0, K)), dw(idx(R, 0, K));
    for (int64_t i = 0; i < R; ++i)
      for (int64_t c = 0; c < K; ++c) {
        S hdo = 0, dhv = 0, hdv = 0;
        for (int64_t v = 0; v < V; ++v) {
          hdo += H(c, v) * Vx(do_, r0 + i, hv, v);
          dhv += dH(c, v) * Vx(vn_, r0 + i, hv, v);
          hdv += H(c, v) * Vx(dv2_, r0 + i, hv, v);
        }
        dqh[idx(i, c, K)] = sc * ex(G(r0 + i, hv, c)) * hdo;
        dk1[idx(i, c, K)] = ex(G(rL, hv, c) - G(r0 + i, hv, c)) * dhv;
        dw[idx(i, c, K)] = -hdv;
      }
    // ū = Akkᵀ dv2, w̄ = Akkᵀ dw.
    std::vector<S> ub(idx(R, 0, V)), wb(idx(R, 0, K));
    for (int64_t j = 0; j < R; ++j) {
      for (int64_t v = 0; v < V; ++v) {
        S s = 0;
        for (int64_t t = 0; t < R; ++t) s += Akk(r0 + t, hv, j) * Vx(dv2_, r0 + t, hv, v);
        ub[idx(j, v, V)] = s;
      }
      for (int64_t c = 0; c < K; ++c) {
        S s = 0;
        for (int64_t t = 0; t < R; ++t) s += Akk(r0 + t, hv, j) * dw[idx(t, c, K)];
        wb[idx(j, c, K)] = s;
      }
    }
    for (int64_t i = 0; i < R; ++i) {
      const int64_t ri = r0 + i;
      const S bi = Beta(ri, hv);
      S db = 0;
      for (int64_t v = 0; v < V; ++v) {
        dv_[static_cast<size_t>((ri * p.HV + hv) * V + v)] = bi * ub[idx(i, v, V)];
        db += ub[idx(i, v, V)] * Vx(v_, ri, hv, v);
      }
      for (int64_t c = 0; c < K; ++c) {
        const S e = ex(G(ri, hv, c)), kic = Kx(ri, h, c), w = wb[idx(i, c, K)];
        db += e * kic * w;
        S dg = Q(ri, h, c) * dqh[idx(i, c, K)] - kic * dk1[idx(i, c, K)] + bi * e * kic * w;
        if (ri == rL) {
          S hdh = 0, kdk = 0;
          for (int64_t v = 0; v < V; ++v) hdh += H(c, v) * dH(c, v);
          for (int64_t t = 0; t < R; ++t) kdk += Kx(r0 + t, h, c) * dk1[idx(t, c, K)];
          dg += ex(G(rL, hv, c)) * hdh + kdk;
        }
        dg_[static_cast<size_t>((ri * p.HV + hv) * K + c)] = dg;
        const size_t o = static_cast<size_t>((ri * p.H + h) * K + c);
        dq_[o] += dqh[idx(i, c, K)];
        dk_[o] += dk1[idx(i, c, K)] + bi * e * w;
      }
      dbeta_[static_cast<size_t>(ri * p.HV + hv)] = db;
    }
    // dA = −Akkᵀ X Akkᵀ with X strictly lower: Y = Akkᵀ X, then dA[i, j] = −Σ_b Y[i, b] Akk[j, b].
    std::vector<S> X(idx(R, 0, R), S(0)), Y(idx(R, 0, R), S(0));
    for (int64_t t = 0; t < R; ++t)
      for (int64_t j = 0; j < t; ++j) {
        S s = 0;
        for (int64_t v = 0; v < V; ++v) s += Vx(dv2_, r0 + t, hv, v) * Vx(v_, r0 + j, hv, v);
        for (int64_t c = 0; c < K; ++c)
          s += dw[idx(t, c, K)] * ex(G(r0 + j, hv, c)) * Kx(r0 + j, h, c);
        X[idx(t, j, R)] = Beta(r0 + j, hv) * s;
      }
    for (int64_t i = 0; i < R; ++i)
      for (int64_t b = 0; b < R; ++b) {
        S s = 0;
        for (int64_t a = 0; a < R; ++a) s += Akk(r0 + a, hv, i) * X[idx(a, b, R)];
        Y[idx(i, b, R)] = s;
      }
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < i; ++j) {
        S s = 0;
        for (int64_t b = 0; b < R; ++b) s += Y[idx(i, b, R)] * Akk(r0 + j, hv, b);
        dA_[static_cast<size_t>(((r0 + i) * p.HV + hv) * p.BT + j)] = -s;
      }
  }

  const Params& p_;
  const std::vector<double> q_, k_, v_, vn_, g_, beta_, A_, h_, do_, dh_, dv2_;  // fp64 inputs
  std::vector<S> dq_, dk_;  // [B, T, H, K]: the group sums
  std::vector<S> dv_, dbeta_, dg_, dA_;
};

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.q_dtype != DType::fp64)
    Golden<float>(p).run();
  else
    Golden<double>(p).run();
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
