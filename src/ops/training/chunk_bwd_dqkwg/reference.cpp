// training/chunk_bwd_dqkwg/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formulas in fp64 (the inputs widened to fp64 once), written out per element. For each chunk
// (first position c0, last L), value head hv (key head h = hv / (HV / H)) and position i of it:
//   ds_ij = scale · exp(G_i − G_j) · Σ_v do[i, hv, v] · v_new[j, hv, v]            (j ≤ i)
//   dq_hv[i, c] = scale · exp(G_i) · Σ_v h_c[c, v] · do[i, hv, v] + Σ_{j ≤ i} ds_ij · k[j, h, c]
//   dk_hv[i, c] = exp(G_L − G_i) · Σ_v dh_c[c, v] · v_new[i, hv, v] + Σ_{j ≥ i} ds_ji · q[j, h, c]
//   dw[i, hv, c] = −Σ_v h_c[c, v] · dv2[i, hv, v]
//   dg[i, hv] = Σ_c q[i, h, c] · dq_hv[i, c] − Σ_c k[i, h, c] · dk_hv[i, c]
//             + [i = L] · (exp(G_L) · Σ_{c,v} dh_c[c, v] · h_c[c, v]
//                 + Σ_{t'} exp(G_L − G_t') · Σ_c k[t', h, c] · Σ_v dh_c[c, v] · v_new[t', hv, v])
//   dq[i, h] = Σ over the group's value heads of dq_hv (in head order), dk likewise.
// Row i's ds_ij (j ≤ i) is summed afresh for dq, column i's ds_ji (j ≥ i) afresh for dk, and the
// last term of dg afresh from the inputs. With p.plain, the double standard's plain baseline: the
// same loops with S = fp32 (fp64 for fp64 q), ds stored in k's dtype before it multiplies k and q
// (fla's `b_ds.to(b_k.dtype)`), and each value head's dq_hv, dk_hv rounded to dq's / dk's dtype
// before the group sum (fla stores dq, dk at HV heads in q's dtype, then sums). Includes params.h
// and core only; shares no code with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_bwd_dqkwg/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {
using training::golden::offset_value;
using training::golden::round_to;
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
        do_(widened(p.d_o, p.do_dtype, p.B * p.T * p.HV * p.V)),
        dv2_(widened(p.dv2, p.dv2_dtype, p.B * p.T * p.HV * p.V)),
        g_(widened(p.g, p.g_dtype, p.B * p.T * p.HV)),
        h_(widened(p.h, p.h_dtype, p.B * p.NT * p.HV * p.K * p.V)),
        dh_(widened(p.dh, p.dh_dtype, p.B * p.NT * p.HV * p.K * p.V)) {}

  void run() {
    const Params& p = p_;
    const size_t nqk = static_cast<size_t>(p.B * p.T * p.H * p.K);
    dq_.assign(nqk, S(0));
    dk_.assign(nqk, S(0));
    if (p.dv2) dw_.assign(static_cast<size_t>(p.B * p.T * p.HV * p.K), 0.0);
    int64_t chunk_base = 0;  // with offsets: the index in h of sequence n's first chunk
    for (int64_t n = 0; n < p.N; ++n) {
      const int64_t b = p.seq_offsets ? 0 : n;
      const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
      const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
      for (int64_t c0 = first, ci = 0; c0 < last; c0 += p.BT, ++ci) {
        const int64_t L = std::min(c0 + p.BT, last) - 1;
        const int64_t hc = p.seq_offsets ? chunk_base + ci : ci;
        for (int64_t hv = 0; hv < p.HV; ++hv) chunk(b, c0, L, hc, hv);
      }
      if (p.seq_offsets) chunk_base += (last - first + p.BT - 1) / p.BT;
    }
    write_rounded(dq_, p.dq, p.dq_dtype);
    write_rounded(dk_, p.dk, p.dk_dtype);
    if (p.dv2) write_rounded(dw_, p.dw, p.dw_dtype);
  }

 private:
  // Element i of an input, in the arithmetic type.
  static S at(const std::vector<double>& x, int64_t i) {
    return static_cast<S>(x[static_cast<size_t>(i)]);
  }
  S ex(S x) const { return p_.gate_log2 ? std::exp2(x) : std::exp(x); }
  // G at flattened row r, head hv (0 without gates).
  S G(int64_t r, int64_t hv) const { return p_.g ? at(g_, r * p_.HV + hv) : S(0); }
  // ds_ij of rows i ≥ j (flattened), value head hv.
  S ds(int64_t ri, int64_t rj, int64_t hv) const {
    const Params& p = p_;
    S dot = 0;
    for (int64_t v = 0; v < p.V; ++v)
      dot += at(do_, (ri * p.HV + hv) * p.V + v) * at(v_, (rj * p.HV + hv) * p.V + v);
    S gamma = 1;
    if (p.g) gamma = ex(G(ri, hv) - G(rj, hv));
    S s = static_cast<S>(p.scale) * gamma * dot;
    if (p.plain) s = static_cast<S>(round_to(p.k_dtype, static_cast<double>(s)));
    return s;
  }

  // Chunk rows [c0, L] of batch row b (h's chunk hc), value head hv.
  void chunk(int64_t b, int64_t c0, int64_t L, int64_t hc, int64_t hv) {
    const Params& p = p_;
    const int64_t h = hv / (p.HV / p.H), R = L - c0 + 1;
    const int64_t hbase = ((b * p.NT + hc) * p.HV + hv) * p.K * p.V;
    const S sc = static_cast<S>(p.scale);
    const int64_t rL = b * p.T + L;
    std::vector<S> dqh(static_cast<size_t>(R * p.K)), dkh(static_cast<size_t>(R * p.K));
    std::vector<S> dsrow(static_cast<size_t>(R)), dscol(static_cast<size_t>(R));
    for (int64_t i = 0; i < R; ++i) {
      const int64_t ri = b * p.T + c0 + i;
      for (int64_t j = 0; j <= i; ++j) dsrow[static_cast<size_t>(j)] = ds(ri, b * p.T + c0 + j, hv);
      for (int64_t j = i; j < R; ++j) dscol[static_cast<size_t>(j)] = ds(b * p.T + c0 + j, ri, hv);
      for (int64_t c = 0; c < p.K; ++c) {
        S hdo = 0, dhv = 0;
        for (int64_t v = 0; v < p.V; ++v) {
          hdo += at(h_, hbase + c * p.V + v) * at(do_, (ri * p.HV + hv) * p.V + v);
          dhv += at(dh_, hbase + c * p.V + v) * at(v_, (ri * p.HV + hv) * p.V + v);
        }
        S intra_q = 0, intra_k = 0;
        for (int64_t j = 0; j <= i; ++j)
          intra_q +=
              dsrow[static_cast<size_t>(j)] * at(k_, ((b * p.T + c0 + j) * p.H + h) * p.K + c);
        for (int64_t j = i; j < R; ++j)
          intra_k +=
              dscol[static_cast<size_t>(j)] * at(q_, ((b * p.T + c0 + j) * p.H + h) * p.K + c);
        const S dec_q = p.g ? ex(G(ri, hv)) : S(1);
        const S dec_k = p.g ? ex(G(rL, hv) - G(ri, hv)) : S(1);
        dqh[static_cast<size_t>(i * p.K + c)] = sc * dec_q * hdo + intra_q;
        dkh[static_cast<size_t>(i * p.K + c)] = dec_k * dhv + intra_k;
      }
      if (p.dv2) {
        for (int64_t c = 0; c < p.K; ++c) {
          S acc = 0;
          for (int64_t v = 0; v < p.V; ++v)
            acc += at(h_, hbase + c * p.V + v) * at(dv2_, (ri * p.HV + hv) * p.V + v);
          dw_[static_cast<size_t>((ri * p.HV + hv) * p.K + c)] = -static_cast<double>(acc);
        }
      }
    }
    if (p.g) {
      // The state terms of dG_L, from the inputs.
      S hdh = 0;
      for (int64_t e = 0; e < p.K * p.V; ++e) hdh += at(dh_, hbase + e) * at(h_, hbase + e);
      S kterm = 0;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t rt = b * p.T + c0 + t;
        S s = 0;
        for (int64_t c = 0; c < p.K; ++c) {
          S dhv = 0;
          for (int64_t v = 0; v < p.V; ++v)
            dhv += at(dh_, hbase + c * p.V + v) * at(v_, (rt * p.HV + hv) * p.V + v);
          s += at(k_, (rt * p.H + h) * p.K + c) * dhv;
        }
        kterm += ex(G(rL, hv) - G(rt, hv)) * s;
      }
      for (int64_t i = 0; i < R; ++i) {
        const int64_t ri = b * p.T + c0 + i;
        S dg = 0;
        for (int64_t c = 0; c < p.K; ++c)
          dg += at(q_, (ri * p.H + h) * p.K + c) * dqh[static_cast<size_t>(i * p.K + c)] -
                at(k_, (ri * p.H + h) * p.K + c) * dkh[static_cast<size_t>(i * p.K + c)];
        // The state terms are sums over K x V: empty (no term, whatever G is) when K or V is 0.
        if (i == R - 1 && p.K > 0 && p.V > 0) dg += ex(G(rL, hv)) * hdh + kterm;
        p.dg[ri * p.HV + hv] = static_cast<float>(dg);
      }
    }
    // The group sum into key head h, in value-head order.
    for (int64_t i = 0; i < R; ++i) {
      const int64_t at = ((b * p.T + c0 + i) * p.H + h) * p.K;
      for (int64_t c = 0; c < p.K; ++c) {
        S x = dqh[static_cast<size_t>(i * p.K + c)], y = dkh[static_cast<size_t>(i * p.K + c)];
        if (p.plain) {
          x = static_cast<S>(round_to(p.dq_dtype, static_cast<double>(x)));
          y = static_cast<S>(round_to(p.dk_dtype, static_cast<double>(y)));
        }
        dq_[static_cast<size_t>(at + c)] += x;
        dk_[static_cast<size_t>(at + c)] += y;
      }
    }
  }

  const Params& p_;
  const std::vector<double> q_, k_, v_, do_, dv2_, g_, h_, dh_;  // the inputs in fp64
  std::vector<S> dq_, dk_;                                       // [B, T, H, K]: the group sums
  std::vector<double> dw_;                                       // [B, T, HV, K]
};

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.q_dtype != DType::fp64)
    Golden<float>(p).run();
  else
    Golden<double>(p).run();
  return Status::Ok();
}

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
