// training/prepare_wy_repr_bwd/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// wy_fast formulas in fp64, per chunk and value head, each sum formed straight from its
// definition (ū and w̄ column by column, dAi = du (β⊙V)ᵀ + dw (β⊙e⊙K)ᵀ, then Aiᵀ·dAi and ·Aiᵀ,
// then the A-path terms), the GVA group sum of dk in fp64, every output rounded once. With
// p.plain, the double standard's plain baseline: the same loops in fp32 (fp64 for fp64 k or v),
// dA·Γ stored in k's dtype before it multiplies k (fla's `b_dA.to(k.dtype)`) and each value
// head's dk rounded to k's dtype before the group sum (fla's dk at HV heads, then .sum()).
// Includes params.h and core only; shares no code with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/common/gdn_golden.h"
#include "ops/training/prepare_wy_repr_bwd/impls.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {
namespace {

using training::golden::load;
using training::golden::offset_value;
using training::golden::round_to;
using training::golden::store;

// One chunk [c0, c0 + L) of batch row b, every value head; S the arithmetic type.
template <class S>
void chunk(const Params& p, int64_t b, int64_t c0, int64_t L) {
  const int64_t HV = p.HV, K = p.K, V = p.V, group = HV / p.H;
  auto row = [&](int64_t t) { return b * p.T + c0 + t; };  // flattened row of chunk position t
  auto ex = [&](S x) { return p.gate_log2 ? std::exp2(x) : std::exp(x); };
  auto M = [&](int64_t n) { return std::vector<S>(static_cast<size_t>(n), S(0)); };
  for (int64_t h = 0; h < p.H; ++h) {
    std::vector<S> dk_sum = M(L * K);  // the group's dk
    for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
      // The chunk's inputs of this value head, widened to S once.
      std::vector<S> A_ = M(L * L), k_ = M(L * K), v_ = M(L * V), dw_ = M(L * K), du_ = M(L * V);
      std::vector<S> b_ = M(L), g_ = M(L);
      for (int64_t t = 0; t < L; ++t) {
        for (int64_t j = 0; j < L; ++j)
          A_[t * L + j] = static_cast<S>(load(p.Ai, p.Ai_dtype, (row(t) * HV + hv) * p.BT + j));
        for (int64_t d = 0; d < K; ++d) {
          k_[t * K + d] = static_cast<S>(load(p.k, p.k_dtype, (row(t) * p.H + h) * K + d));
          dw_[t * K + d] = static_cast<S>(load(p.dw, p.dw_dtype, (row(t) * HV + hv) * K + d));
        }
        for (int64_t d = 0; d < V; ++d) {
          v_[t * V + d] = static_cast<S>(load(p.v, p.v_dtype, (row(t) * HV + hv) * V + d));
          du_[t * V + d] = static_cast<S>(load(p.du, p.du_dtype, (row(t) * HV + hv) * V + d));
        }
        b_[t] = static_cast<S>(load(p.beta, p.beta_dtype, row(t) * HV + hv));
        if (p.g) g_[t] = static_cast<S>(load(p.g, p.g_dtype, row(t) * HV + hv));
      }
      auto ai = [&](int64_t t, int64_t j) { return A_[t * L + j]; };
      auto kk = [&](int64_t t, int64_t d) { return k_[t * K + d]; };
      auto vv = [&](int64_t t, int64_t d) { return v_[t * V + d]; };
      auto dwv = [&](int64_t t, int64_t d) { return dw_[t * K + d]; };
      auto duv = [&](int64_t t, int64_t d) { return du_[t * V + d]; };
      auto beta = [&](int64_t t) { return b_[t]; };
      auto e = [&](int64_t t) { return p.g ? ex(g_[t]) : S(1); };
      auto gamma = [&](int64_t t, int64_t j) { return p.g ? ex(g_[t] - g_[j]) : S(1); };
      auto kdot = [&](int64_t t, int64_t j) {
        S s = 0;
        for (int64_t d = 0; d < K; ++d) s += kk(t, d) * kk(j, d);
        return s;
      };
      // ū = Aiᵀ du, w̄ = Aiᵀ dw (column j of Ai: rows t ≥ j).
      std::vector<S> ub = M(L * V), wb = M(L * K);
      for (int64_t j = 0; j < L; ++j) {
        for (int64_t d = 0; d < V; ++d) {
          S s = 0;
          for (int64_t t = 0; t < L; ++t) s += ai(t, j) * duv(t, d);
          ub[j * V + d] = s;
        }
        for (int64_t d = 0; d < K; ++d) {
          S s = 0;
          for (int64_t t = 0; t < L; ++t) s += ai(t, j) * dwv(t, d);
          wb[j * K + d] = s;
        }
      }
      // dAi (strictly lower), Z = Aiᵀ dAi, dA = −Z Aiᵀ (strictly lower), dA' = dA·Γ.
      std::vector<S> dAi = M(L * L), Z = M(L * L), dA = M(L * L);
      for (int64_t t = 0; t < L; ++t)
        for (int64_t j = 0; j < t; ++j) {
          S s = 0;
          for (int64_t d = 0; d < V; ++d) s += duv(t, d) * beta(j) * vv(j, d);
          for (int64_t d = 0; d < K; ++d) s += dwv(t, d) * beta(j) * e(j) * kk(j, d);
          dAi[t * L + j] = s;
        }
      for (int64_t t = 0; t < L; ++t)
        for (int64_t c = 0; c < L; ++c) {
          S s = 0;
          for (int64_t r = 0; r < L; ++r) s += ai(r, t) * dAi[r * L + c];
          Z[t * L + c] = s;
        }
      for (int64_t t = 0; t < L; ++t)
        for (int64_t j = 0; j < t; ++j) {
          S s = 0;
          for (int64_t c = 0; c < L; ++c) s += Z[t * L + c] * ai(j, c);
          S x = -s * gamma(t, j);
          if (p.plain) x = static_cast<S>(round_to(p.k_dtype, static_cast<double>(x)));
          dA[t * L + j] = x;  // dA_tj·Γ_tj
        }
      for (int64_t t = 0; t < L; ++t) {
        // dv
        for (int64_t d = 0; d < V; ++d)
          store(p.dv, p.v_dtype, (row(t) * HV + hv) * V + d,
                static_cast<double>(beta(t) * ub[t * V + d]));
        // dβ, dG
        S db = 0, wk = 0;
        for (int64_t d = 0; d < V; ++d) db += ub[t * V + d] * vv(t, d);
        for (int64_t d = 0; d < K; ++d) wk += wb[t * K + d] * kk(t, d);
        db += e(t) * wk;
        S dg = beta(t) * e(t) * wk;
        // The k·k terms are sums over K: none when K = 0 (whatever dA is), as dk's.
        if (K > 0) {
          for (int64_t j = 0; j < t; ++j) {
            db += dA[t * L + j] * kdot(t, j);
            dg += dA[t * L + j] * beta(t) * kdot(t, j);
          }
          for (int64_t s = t + 1; s < L; ++s) dg -= dA[s * L + t] * beta(s) * kdot(s, t);
        }
        store(p.dbeta, p.beta_dtype, row(t) * HV + hv, static_cast<double>(db));
        if (p.dg) p.dg[row(t) * HV + hv] = static_cast<float>(dg);
        // dk of this value head
        for (int64_t d = 0; d < K; ++d) {
          S x = beta(t) * e(t) * wb[t * K + d];
          for (int64_t j = 0; j < t; ++j) x += dA[t * L + j] * beta(t) * kk(j, d);
          for (int64_t s = t + 1; s < L; ++s) x += dA[s * L + t] * beta(s) * kk(s, d);
          if (p.plain && group > 1) x = static_cast<S>(round_to(p.k_dtype, static_cast<double>(x)));
          dk_sum[t * K + d] += x;
        }
      }
    }
    for (int64_t t = 0; t < L; ++t)
      for (int64_t d = 0; d < K; ++d)
        store(p.dk, p.k_dtype, (row(t) * p.H + h) * K + d, static_cast<double>(dk_sum[t * K + d]));
  }
}

template <class S>
void golden(const Params& p) {
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t c0 = first; c0 < last; c0 += p.BT) chunk<S>(p, b, c0, std::min(p.BT, last - c0));
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!p.plain || p.k_dtype == DType::fp64 || p.v_dtype == DType::fp64)
    golden<double>(p);
  else
    golden<float>(p);
  return Status::Ok();
}

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
