// training/prepare_wy_repr_bwd/cpu/prepare_wy_repr_bwd_cpu.cpp: the optimized CPU path. Work items
// are (chunk, key head h), split statically over threads (core::parallel_for); each output element
// is written by one item, so results do not depend on the thread count. Per item the chunk's k
// rows at head h are widened once with their Gram matrix k_t·k_j; then for each value head hv of
// h's group, in head order, its Ai block [R, R], β, exp(G) and its v, du, dw rows are widened once
// and
//   ū = Aiᵀ du, w̄ = Aiᵀ dw                       (row axpys over V and K)
//   dv = β ū, dβ = ū·v + e w̄·k, dG = β e (k·w̄)  (e = exp(G))
//   dAi_tj = du_t·(β_j v_j) + dw_t·(β_j e_j k_j)   (t > j)
//   dA' = −(Aiᵀ dAi Aiᵀ)·Γ                         (t > j; Z = Aiᵀ dAi by row axpys, then dots)
//   dβ_t += Σ_j dA'_tj kk_tj, dG_t += Σ_j dA'_tj β_t kk_tj, dG_j −= the same terms,
//   dk_t += β_t Σ_j dA'_tj k_j, dk_j += Σ_t dA'_tj β_t k_t  (row axpys)
// with dk accumulated into the item's group sum (fp32), rounded once at the end. Only
// exponentials of G_t and of non-positive differences G_t − G_j (t > j) are formed
// (training_ops.md §4.2). Arithmetic: fp32 (fp64 for fp64 k or v).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/prepare_wy_repr_bwd/impls.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {
namespace {

// Rows [row0, row0 + R) of a [rows, heads, D] tensor (dtype t) at head `head` into out [R, D].
template <class S>
void gather(const void* base, DType t, int64_t row0, int64_t R, int64_t heads, int64_t head,
            int64_t D, S* out) {
  visit_floating(t, [&](auto tag) {
    using X = decltype(tag);
    for (int64_t r = 0; r < R; ++r) {
      const X* src = static_cast<const X*>(base) + ((row0 + r) * heads + head) * D;
      S* o = out + r * D;
      if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>)
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<S>(src[d]);
      else
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<S>(to_float(src[d]));
    }
  });
}

// in [R, D] rounded into rows [row0, row0 + R) of a [rows, heads, D] tensor at head `head`.
template <class S>
void scatter(const S* in, int64_t row0, int64_t R, int64_t heads, int64_t head, int64_t D,
             void* base, DType t) {
  visit_floating(t, [&](auto tag) {
    using X = decltype(tag);
    for (int64_t r = 0; r < R; ++r) {
      X* dst = static_cast<X*>(base) + ((row0 + r) * heads + head) * D;
      const S* s = in + r * D;
      if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>)
        for (int64_t d = 0; d < D; ++d) dst[d] = static_cast<X>(s[d]);
      else
        for (int64_t d = 0; d < D; ++d) {
          if constexpr (std::is_same_v<S, double>)
            dst[d] = from_double<X>(s[d]);
          else
            dst[d] = from_float<X>(s[d]);
        }
    }
  });
}

// a·b over n elements with four partial sums.
template <class S>
S dot4(const S* a, const S* b, int64_t n) {
  S s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

// True when x[0, n) holds no NaN or inf. A zero coefficient may skip a row only then: 0·NaN and
// 0·inf are NaN in the reference's dense product (README, non-finite values).
template <class S>
bool finite_row(const S* x, int64_t n) {
  S s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i] * S(0);  // NaN iff some x[i] is NaN or ±inf
  return s == S(0);
}

// y[0, n) += c·x[0, n).
template <class S>
void axpy(S c, const S* __restrict x, S* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += c * x[i];
}

template <class S>
struct Work {
  std::vector<S> k, kk, a, v, du, dw, ub, wb, xv, xk, dAi, Z, dA, dk, dv, beta, e, g, db, dg;
  explicit Work(int64_t BT, int64_t K, int64_t V) {
    const auto n = [](int64_t x) { return static_cast<size_t>(x); };
    for (auto* m : {&k, &dw, &wb, &xk, &dk}) m->resize(n(BT * K));
    for (auto* m : {&v, &du, &ub, &xv, &dv}) m->resize(n(BT * V));
    for (auto* m : {&kk, &a, &dAi, &Z, &dA}) m->resize(n(BT * BT));
    for (auto* m : {&beta, &e, &g, &db, &dg}) m->resize(n(BT));
  }
};

template <class S>
void item(const Params& p, const training::TimeChunk& ch, int64_t h, Work<S>& w) {
  const int64_t HV = p.HV, K = p.K, V = p.V, BT = p.BT, R = ch.rows, r0 = ch.row0;
  const int64_t group = HV / p.H;
  gather<S>(p.k, p.k_dtype, r0, R, p.H, h, K, w.k.data());
  for (int64_t t = 0; t < R; ++t)
    for (int64_t j = 0; j < t; ++j)
      w.kk[t * BT + j] = dot4(w.k.data() + t * K, w.k.data() + j * K, K);
  std::fill(w.dk.begin(), w.dk.begin() + R * K, S(0));
  for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
    for (int64_t t = 0; t < R; ++t)
      gather<S>(p.Ai, p.Ai_dtype, r0 + t, 1, HV, hv, BT, w.a.data() + t * BT);
    gather<S>(p.v, p.v_dtype, r0, R, HV, hv, V, w.v.data());
    gather<S>(p.du, p.du_dtype, r0, R, HV, hv, V, w.du.data());
    gather<S>(p.dw, p.dw_dtype, r0, R, HV, hv, K, w.dw.data());
    gather<S>(p.beta, p.beta_dtype, r0, R, HV, hv, 1, w.beta.data());
    if (p.g) {
      gather<S>(p.g, p.g_dtype, r0, R, HV, hv, 1, w.g.data());
      for (int64_t t = 0; t < R; ++t) w.e[t] = p.gate_log2 ? std::exp2(w.g[t]) : std::exp(w.g[t]);
    } else {
      std::fill(w.e.begin(), w.e.begin() + R, S(1));
    }
    // ū = Aiᵀ du, w̄ = Aiᵀ dw over the whole R×R block (solve_tril leaves zeros above it).
    std::fill(w.ub.begin(), w.ub.begin() + R * V, S(0));
    std::fill(w.wb.begin(), w.wb.begin() + R * K, S(0));
    for (int64_t t = 0; t < R; ++t) {
      const bool finite = finite_row(w.du.data() + t * V, V) && finite_row(w.dw.data() + t * K, K);
      for (int64_t j = 0; j < R; ++j) {
        const S c = w.a[t * BT + j];
        if (c == S(0) && finite) continue;
        axpy(c, w.du.data() + t * V, w.ub.data() + j * V, V);
        axpy(c, w.dw.data() + t * K, w.wb.data() + j * K, K);
      }
    }
    for (int64_t t = 0; t < R; ++t) {
      const S b = w.beta[t], be = b * w.e[t];
      for (int64_t d = 0; d < V; ++d) {
        w.dv[t * V + d] = b * w.ub[t * V + d];
        w.xv[t * V + d] = b * w.v[t * V + d];
      }
      for (int64_t d = 0; d < K; ++d) {
        w.dk[t * K + d] += be * w.wb[t * K + d];
        w.xk[t * K + d] = be * w.k[t * K + d];
      }
      const S wk = dot4(w.wb.data() + t * K, w.k.data() + t * K, K);
      w.db[t] = dot4(w.ub.data() + t * V, w.v.data() + t * V, V) + w.e[t] * wk;
      w.dg[t] = be * wk;
    }
    // dAi (strictly lower), Z = Aiᵀ dAi (row r of dAi feeds rows t of Z with Ai[r, t]).
    std::fill(w.Z.begin(), w.Z.end(), S(0));
    for (int64_t t = 0; t < R; ++t)
      for (int64_t j = 0; j < t; ++j)
        w.dAi[t * BT + j] = dot4(w.du.data() + t * V, w.xv.data() + j * V, V) +
                            dot4(w.dw.data() + t * K, w.xk.data() + j * K, K);
    for (int64_t r = 1; r < R; ++r) {
      const bool finite = finite_row(w.dAi.data() + r * BT, r);
      for (int64_t t = 0; t < R; ++t) {
        const S c = w.a[r * BT + t];
        if (c != S(0) || !finite) axpy(c, w.dAi.data() + r * BT, w.Z.data() + t * BT, r);
      }
    }
    // dA'_tj = −(Z Aiᵀ)_tj·Γ_tj for t > j, and its terms in dβ, dG and dk.
    for (int64_t t = 1; t < R; ++t) {
      const S bt = w.beta[t];
      for (int64_t j = 0; j < t; ++j) {
        S x = -dot4(w.Z.data() + t * BT, w.a.data() + j * BT, R);
        if (p.g) x *= p.gate_log2 ? std::exp2(w.g[t] - w.g[j]) : std::exp(w.g[t] - w.g[j]);
        if (K > 0) {  // the k·k terms are sums over K: none when K = 0 (the reference's rule)
          const S kk = w.kk[t * BT + j];
          w.db[t] += x * kk;
          const S adA = x * bt * kk;
          w.dg[t] += adA;
          w.dg[j] -= adA;
        }
        axpy(x * bt, w.k.data() + j * K, w.dk.data() + t * K, K);
        axpy(x * bt, w.k.data() + t * K, w.dk.data() + j * K, K);
      }
    }
    scatter<S>(w.dv.data(), r0, R, HV, hv, V, p.dv, p.v_dtype);
    scatter<S>(w.db.data(), r0, R, HV, hv, 1, p.dbeta, p.beta_dtype);
    if (p.dg)
      for (int64_t t = 0; t < R; ++t) p.dg[(r0 + t) * HV + hv] = static_cast<float>(w.dg[t]);
  }
  scatter<S>(w.dk.data(), r0, R, p.H, h, K, p.dk, p.k_dtype);
}

template <class S>
void run_all(const Params& p, int threads) {
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  const int64_t items = static_cast<int64_t>(chunks.size()) * p.H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Work<S> w(p.BT, p.K, p.V);
    for (int64_t i = begin; i < end; ++i)
      item<S>(p, chunks[static_cast<size_t>(i / p.H)], i % p.H, w);
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (p.k_dtype == DType::fp64 || p.v_dtype == DType::fp64)
    run_all<double>(p, ctx.num_threads);
  else
    run_all<float>(p, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
