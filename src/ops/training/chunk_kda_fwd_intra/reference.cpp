// training/chunk_kda_fwd_intra/reference.cpp: the golden (accuracy.md): training_ops.md §4.5's
// formulas in fp64, per (sequence, chunk, value head): Aqk and M from the d-sums with
// exp(G_i − G_j) formed directly for every pair, Akk = (I + M)^-1 column by column (forward
// substitution of (I + M)·x = e_c), w and u as sums over the chunk's rows, kg and qg elementwise;
// each output rounded once to its dtype. With p.plain, the double standard's plain baseline: the
// same loops with S = fp32 (fp64 when k is fp64). Includes params.h and core only; shares no code
// with cpu/. Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code
// includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_fwd_intra/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_kda_fwd_intra_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::store;

template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H, BT = p.BT, K = p.K, V = p.V, HV = p.HV;
  const S scale = static_cast<S>(p.scale);
  auto e = [&](S x) { return p.gate_log2 ? std::exp2(x) : std::exp(x); };
  std::vector<S> Aqk, M, Akk;
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t c0 = first; c0 < last; c0 += BT) {
      const int64_t L = std::min(BT, last - c0);
      for (int64_t hv = 0; hv < HV; ++hv) {
        const int64_t h = hv / group;
        // Flattened (row, head) element indices of the chunk's row i.
        auto row = [&](int64_t i) { return b * p.T + c0 + i; };
        auto qk_at = [&](int64_t i, int64_t d) { return (row(i) * p.H + h) * K + d; };
        auto hk_at = [&](int64_t i, int64_t d) { return (row(i) * HV + hv) * K + d; };
        auto q = [&](int64_t i, int64_t d) {
          return static_cast<S>(load(p.q, p.q_dtype, qk_at(i, d)));
        };
        auto k = [&](int64_t i, int64_t d) {
          return static_cast<S>(load(p.k, p.k_dtype, qk_at(i, d)));
        };
        auto G = [&](int64_t i, int64_t d) {
          return static_cast<S>(load(p.g, p.g_dtype, hk_at(i, d)));
        };
        auto beta = [&](int64_t i) {
          return static_cast<S>(load(p.beta, p.beta_dtype, row(i) * HV + hv));
        };
        Aqk.assign(static_cast<size_t>(L * L), S(0));
        M.assign(static_cast<size_t>(L * L), S(0));
        Akk.assign(static_cast<size_t>(L * L), S(0));
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j <= i; ++j) {
            S sq = 0, sk = 0;
            for (int64_t d = 0; d < K; ++d) {
              const S gam = e(G(i, d) - G(j, d));
              sq += q(i, d) * k(j, d) * gam;
              sk += k(i, d) * k(j, d) * gam;
            }
            Aqk[i * L + j] = scale * sq;
            if (j < i) M[i * L + j] = beta(i) * sk;
          }
        // Akk = (I + M)^-1: column c solves (I + M) x = e_c by forward substitution.
        for (int64_t c = 0; c < L; ++c) {
          Akk[c * L + c] = 1;
          for (int64_t i = c + 1; i < L; ++i) {
            S s = 0;
            for (int64_t j = c; j < i; ++j) s += M[i * L + j] * Akk[j * L + c];
            Akk[i * L + c] = -s;
          }
        }
        for (int64_t i = 0; i < L; ++i) {
          const int64_t ra = (row(i) * HV + hv) * BT;
          for (int64_t j = 0; j < BT; ++j) {
            store(p.Aqk, p.k_dtype, ra + j, j < L ? static_cast<double>(Aqk[i * L + j]) : 0.0);
            static_cast<float*>(p.Akk)[ra + j] = j < L ? static_cast<float>(Akk[i * L + j]) : 0.0f;
          }
          for (int64_t d = 0; d < K; ++d) {
            // Akk is lower triangular: row i reads rows j <= i only (a later row's values,
            // non-finite ones included, never reach it).
            S acc = 0;
            for (int64_t j = 0; j <= i; ++j)
              acc += Akk[i * L + j] * (beta(j) * k(j, d) * e(G(j, d)));
            store(p.w, p.k_dtype, hk_at(i, d), static_cast<double>(acc));
            store(p.qg, p.q_dtype, hk_at(i, d), static_cast<double>(q(i, d) * e(G(i, d))));
            store(p.kg, p.k_dtype, hk_at(i, d),
                  static_cast<double>(k(i, d) * e(G(L - 1, d) - G(i, d))));
          }
          for (int64_t d = 0; d < V; ++d) {
            S acc = 0;
            for (int64_t j = 0; j <= i; ++j)
              acc += Akk[i * L + j] *
                     (beta(j) * static_cast<S>(load(p.v, p.v_dtype, (row(j) * HV + hv) * V + d)));
            store(p.u, p.v_dtype, (row(i) * HV + hv) * V + d, static_cast<double>(acc));
          }
        }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!p.plain || p.k_dtype == DType::fp64)
    golden<double>(p);
  else
    golden<float>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
