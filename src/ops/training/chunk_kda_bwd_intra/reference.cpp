// training/chunk_kda_bwd_intra/reference.cpp: the golden (accuracy.md): training_ops.md §4.5's
// chunk_kda_bwd_intra formulas in fp64, per (sequence, chunk, key head h, value head hv of h's
// group in order): for every pair j ≤ i of the chunk and channel d, Γ = exp(G_id − G_jd) formed
// directly, and the terms of dq, dk (through Â and both sides of M), dβ and dG summed; dq and dk
// summed over the group and added to the incoming values, each output rounded once. With p.plain,
// the double standard's plain baseline: the same loops with S = fp32 (fp64 when q is fp64).
// Includes params.h and core only; shares no code with cpu/. Its element access is the goldens'
// own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_intra/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_kda_bwd_intra_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;

template <class S>
void golden(const Params& p) {
  const int64_t BT = p.BT, K = p.K, H = p.H, HV = p.HV;
  const int64_t group = H > 0 ? HV / H : 0;
  auto e = [&](S x) { return p.gate_log2 ? std::exp2(x) : std::exp(x); };
  auto ld = [](const void* base, DType t, int64_t i) { return static_cast<S>(load(base, t, i)); };
  std::vector<S> dqs, dks, dq, dkl, dkr, dbeta;
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t c0 = first; c0 < last; c0 += BT) {
      const int64_t L = std::min(BT, last - c0);
      auto row = [&](int64_t i) { return b * p.T + c0 + i; };
      for (int64_t h = 0; h < H; ++h) {
        auto qk_at = [&](int64_t i, int64_t d) { return (row(i) * H + h) * K + d; };
        // The group sums of dq and dk, from the incoming values.
        dqs.assign(static_cast<size_t>(L * K), S(0));
        dks.assign(dqs.size(), S(0));
        for (int64_t i = 0; i < L; ++i)
          for (int64_t d = 0; d < K; ++d) {
            dqs[i * K + d] = ld(p.dq_in, p.dq_dtype, qk_at(i, d));
            dks[i * K + d] = ld(p.dk_in, p.dk_dtype, qk_at(i, d));
          }
        for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
          auto hk_at = [&](int64_t i, int64_t d) { return (row(i) * HV + hv) * K + d; };
          auto ha_at = [&](int64_t i, int64_t j) { return (row(i) * HV + hv) * BT + j; };
          auto q = [&](int64_t i, int64_t d) { return ld(p.q, p.q_dtype, qk_at(i, d)); };
          auto k = [&](int64_t i, int64_t d) { return ld(p.k, p.k_dtype, qk_at(i, d)); };
          auto G = [&](int64_t i, int64_t d) { return ld(p.g, p.g_dtype, hk_at(i, d)); };
          auto beta = [&](int64_t i) { return ld(p.beta, p.beta_dtype, row(i) * HV + hv); };
          // dq: through Â (q_i's side); dkl: through M, k_i's side (row), β_i applied;
          // dkr: through Â and M, k_j's side (column).
          dq.assign(static_cast<size_t>(L * K), S(0));
          dkl.assign(dq.size(), S(0));
          dkr.assign(dq.size(), S(0));
          dbeta.assign(static_cast<size_t>(L), S(0));
          for (int64_t i = 0; i < L; ++i)
            for (int64_t j = 0; j <= i; ++j) {
              const S a = ld(p.dAqk, p.dAqk_dtype, ha_at(i, j));
              const S m = j < i ? ld(p.dAkk, p.dAkk_dtype, ha_at(i, j)) : S(0);
              for (int64_t d = 0; d < K; ++d) {
                const S gam = e(G(i, d) - G(j, d));
                dq[i * K + d] += a * k(j, d) * gam;
                dkr[j * K + d] += a * q(i, d) * gam + m * beta(i) * k(i, d) * gam;
                dkl[i * K + d] += beta(i) * m * k(j, d) * gam;
                dbeta[i] += m * k(i, d) * k(j, d) * gam;
              }
            }
          for (int64_t i = 0; i < L; ++i) {
            p.dbeta[row(i) * HV + hv] =
                static_cast<float>(ld(p.dbeta_in, p.dbeta_dtype, row(i) * HV + hv) + dbeta[i]);
            for (int64_t d = 0; d < K; ++d) {
              const S x = dq[i * K + d], l = dkl[i * K + d], r = dkr[i * K + d];
              // ∂/∂G_id: +Γ where i is the row (dq, dkl), −Γ where it is the column (dkr).
              p.dg[hk_at(i, d)] = static_cast<float>(ld(p.dg_in, p.dg_dtype, hk_at(i, d)) +
                                                     q(i, d) * x + k(i, d) * (l - r));
              dqs[i * K + d] += x;
              dks[i * K + d] += l + r;
            }
          }
        }
        for (int64_t i = 0; i < L; ++i)
          for (int64_t d = 0; d < K; ++d) {
            p.dq[qk_at(i, d)] = static_cast<float>(dqs[i * K + d]);
            p.dk[qk_at(i, d)] = static_cast<float>(dks[i * K + d]);
          }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!p.plain || p.q_dtype == DType::fp64)
    golden<double>(p);
  else
    golden<float>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_intra_ns
