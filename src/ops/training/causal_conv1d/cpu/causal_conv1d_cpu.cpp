// training/causal_conv1d/cpu/causal_conv1d_cpu.cpp: the optimized CPU path. Forward: parallel
// over (sequence, block of channels); per channel the sequence's row (after the W−1 halo) is
// gathered into an acc_t buffer through x's strides, and z = b + Σ_k w_k·row[t+k] runs with the
// time loop innermost (vectorised). Backward: parallel over channel blocks only, so each
// channel's dweight/dbias are summed by one thread in a fixed order (per-sequence acc_t
// partials, then across sequences): deterministic, no workspace. seq_idx takes a scalar, masked
// loop. acc_t: fp32 (fp64 for fp64).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/causal_conv1d/impls.h"

namespace recops::ops::causal_conv1d_ns {
namespace {

constexpr int64_t kBlock = 16;  // channels per task

template <class T>
struct Cpu {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Params& p;

  static Acc cv(T v) {
    if constexpr (std::is_same_v<T, double>)
      return v;
    else
      return to_float(v);
  }
  static T out(Acc v) {
    if constexpr (std::is_same_v<T, double>)
      return v;
    else
      return from_float<T>(v);
  }
  // States are T or fp32.
  Acc st(const void* s, int64_t i) const {
    return p.state_dtype == DType::fp32 ? static_cast<Acc>(static_cast<const float*>(s)[i])
                                        : cv(static_cast<const T*>(s)[i]);
  }
  void st_put(void* s, int64_t i, Acc v) const {
    if (p.state_dtype == DType::fp32)
      static_cast<float*>(s)[i] = static_cast<float>(v);
    else
      static_cast<T*>(s)[i] = out(v);
  }
  Acc w(int64_t d, int64_t k) const {
    return cv(static_cast<const T*>(p.weight)[p.wd ? k * p.D + d : d * p.W + k]);
  }
  int64_t off(int64_t i) const {
    return p.off_dtype == DType::int64 ? static_cast<const int64_t*>(p.seq_offsets)[i]
                                       : static_cast<const int32_t*>(p.seq_offsets)[i];
  }
  int64_t sid(int64_t b, int64_t t) const {
    const int64_t i = b * p.T + t;
    return p.idx_dtype == DType::int64 ? static_cast<const int64_t*>(p.seq_idx)[i]
                                       : static_cast<const int32_t*>(p.seq_idx)[i];
  }
  void seq(int64_t n, int64_t* b, int64_t* start, int64_t* len) const {
    *b = p.seq_offsets ? 0 : n;
    *start = p.seq_offsets ? off(n) : 0;
    *len = p.seq_offsets ? off(n + 1) - *start : p.T;
  }
  static Acc sigm(Acc v) { return Acc(1) / (Acc(1) + std::exp(-v)); }

  // xb[j] = x̃_{j−(W−1)} for j < W−1+L (the halo from the state or zeros); z[t] for t < L.
  void row_z(int64_t n, int64_t b, int64_t start, int64_t L, int64_t d, std::vector<Acc>& xb,
             std::vector<Acc>& z) const {
    const int64_t H = p.W - 1;
    xb.resize(static_cast<size_t>(H + L));
    z.resize(static_cast<size_t>(L));
    for (int64_t j = 0; j < H; ++j)
      xb[j] = p.init ? st(p.init, (n * p.D + d) * p.S + p.S - H + j) : Acc(0);
    const T* x = static_cast<const T*>(p.x) + b * p.sx.b + d * p.sx.d + start * p.sx.t;
    for (int64_t t = 0; t < L; ++t) xb[H + t] = cv(x[t * p.sx.t]);
    const Acc bias = p.bias ? cv(static_cast<const T*>(p.bias)[d]) : Acc(0);
    Acc* zp = z.data();
    const Acc* xp = xb.data();
    for (int64_t t = 0; t < L; ++t) zp[t] = bias;
    if (!p.seq_idx) {
      for (int64_t k = 0; k < p.W; ++k) {
        const Acc wk = w(d, k);
        for (int64_t t = 0; t < L; ++t) zp[t] += wk * xp[t + k];
      }
      return;
    }
    for (int64_t t = 0; t < L; ++t) {
      const int64_t id = sid(b, start + t);
      for (int64_t k = 0; k < p.W; ++k) {
        const int64_t tau = t - H + k;
        // A tap of another sequence reads 0, and its product is formed (0 · w, NaN for a NaN or
        // infinite w), as the golden's and Dao's: a select, not a skip.
        const Acc xv = tau >= 0 && sid(b, start + tau) != id ? Acc(0) : xp[t + k];
        zp[t] += w(d, k) * xv;
      }
    }
  }

  void forward(int threads) const {
    const int64_t nb = (p.D + kBlock - 1) / kBlock;
    core::parallel_for(p.N * nb, 1, threads, [&](int64_t begin, int64_t end) {
      std::vector<Acc> xb, z;
      for (int64_t item = begin; item < end; ++item) {
        const int64_t n = item / nb, d0 = (item % nb) * kBlock;
        int64_t b, start, L;
        seq(n, &b, &start, &L);
        for (int64_t d = d0; d < std::min(d0 + kBlock, p.D); ++d) {
          row_z(n, b, start, L, d, xb, z);
          T* y = static_cast<T*>(p.y) + b * p.sy.b + d * p.sy.d + start * p.sy.t;
          const T* r = p.residual ? static_cast<const T*>(p.residual) + b * p.sres.b +
                                        d * p.sres.d + start * p.sres.t
                                  : nullptr;
          for (int64_t t = 0; t < L; ++t) {
            Acc v = p.silu ? z[t] * sigm(z[t]) : z[t];
            if (r) v += cv(r[t * p.sres.t]);
            y[t * p.sy.t] = out(v);
          }
          if (!p.final_state) continue;
          // Entry j of the last S of [init-or-zeros (S) ‖ x (L)] is position L + j.
          const int64_t base = (n * p.D + d) * p.S;
          for (int64_t j = 0; j < p.S; ++j) {
            const int64_t c = L + j;
            const Acc v =
                c >= p.S ? xb[p.W - 1 + c - p.S] : (p.init ? st(p.init, base + c) : Acc(0));
            st_put(p.final_state, base + j, v);
          }
        }
      }
    });
  }

  void backward(int threads) const {
    const int64_t nb = (p.D + kBlock - 1) / kBlock;
    const int64_t H = p.W - 1, S = p.S;
    core::parallel_for(nb, 1, threads, [&](int64_t begin, int64_t end) {
      std::vector<Acc> xb, z, dzp, g;
      for (int64_t blk = begin; blk < end; ++blk) {
        for (int64_t d = blk * kBlock; d < std::min((blk + 1) * kBlock, p.D); ++d) {
          Acc dw[8] = {}, db = 0;
          for (int64_t n = 0; n < p.N; ++n) {
            int64_t b, start, L;
            seq(n, &b, &start, &L);
            row_z(n, b, start, L, d, xb, z);
            // dzp[S + t] = dz_t for t < L, zero for t < 0 and t ≥ L (W−1 of them).
            dzp.assign(static_cast<size_t>(S + L + H), Acc(0));
            const T* dy = static_cast<const T*>(p.dy) + b * p.sdy.b + d * p.sdy.d + start * p.sdy.t;
            Acc pdw[8] = {}, pdb = 0;  // this sequence's partials
            for (int64_t t = 0; t < L; ++t) {
              Acc a = 1;
              if (p.silu) {
                const Acc s = sigm(z[t]);
                a = s * (Acc(1) + z[t] * (Acc(1) - s));
              }
              dzp[S + t] = cv(dy[t * p.sdy.t]) * a;
              pdb += dzp[S + t];
            }
            const Acc* dz = dzp.data() + S;
            if (!p.seq_idx) {
              for (int64_t k = 0; k < p.W; ++k) {
                Acc s = 0;
                for (int64_t t = 0; t < L; ++t) s += dz[t] * xb[t + k];
                pdw[k] = s;
              }
            } else {
              for (int64_t t = 0; t < L; ++t) {
                const int64_t id = sid(b, start + t);
                for (int64_t k = 0; k < p.W; ++k) {
                  const int64_t tau = t - H + k;
                  // As the forward's taps: another sequence's x reads 0, the product is formed.
                  const Acc xv = tau >= 0 && sid(b, start + tau) != id ? Acc(0) : xb[t + k];
                  pdw[k] += dz[t] * xv;
                }
              }
            }
            for (int64_t k = 0; k < p.W; ++k) dw[k] += pdw[k];
            db += pdb;
            // g[c], c = tau + S for tau in [−S, L): Σ_k w_k·dz_{tau+W−1−k}.
            g.assign(static_cast<size_t>(S + L), Acc(0));
            if (!p.seq_idx) {
              for (int64_t k = 0; k < p.W; ++k) {
                const Acc wk = w(d, k);
                const Acc* src = dzp.data() + H - k;
                // Only the outputs that exist (t = c - S + H - k in [0, L)), as the golden's sum:
                // no w_k · 0 from the padding, which made a NaN or infinite w_k spread to the
                // last W - 1 - k positions of dx (and to d_initial_state).
                const int64_t c0 = std::max<int64_t>(0, S - H + k);
                const int64_t c1 = std::min<int64_t>(S + L, S - H + k + L);
                for (int64_t c = c0; c < c1; ++c) g[c] += wk * src[c];
              }
            } else {
              for (int64_t c = 0; c < S + L; ++c) {
                const int64_t tau = c - S;
                for (int64_t k = 0; k < p.W; ++k) {
                  const int64_t t = tau + H - k;
                  if (t < 0 || t >= L) continue;
                  if (tau >= 0 && sid(b, start + tau) != sid(b, start + t)) continue;
                  g[c] += w(d, k) * dz[t];
                }
              }
            }
            const int64_t base = (n * p.D + d) * S;
            if (p.dfinal)
              for (int64_t c = L; c < S + L; ++c) g[c] += st(p.dfinal, base + c - L);
            T* dx = static_cast<T*>(p.dx) + b * p.sdx.b + d * p.sdx.d + start * p.sdx.t;
            for (int64_t t = 0; t < L; ++t) dx[t * p.sdx.t] = out(g[S + t]);
            if (p.dinit)
              for (int64_t c = 0; c < S; ++c) st_put(p.dinit, base + c, g[c]);
            if (p.dres) {
              T* dr = static_cast<T*>(p.dres) + b * p.sdres.b + d * p.sdres.d + start * p.sdres.t;
              for (int64_t t = 0; t < L; ++t) dr[t * p.sdres.t] = dy[t * p.sdy.t];
            }
          }
          T* dwo = static_cast<T*>(p.dweight);
          for (int64_t k = 0; k < p.W; ++k) dwo[p.wd ? k * p.D + d : d * p.W + k] = out(dw[k]);
          if (p.dbias) static_cast<T*>(p.dbias)[d] = out(db);
        }
      }
    });
  }
};

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) {
        const Cpu<decltype(t)> c{p};
        if (p.backward)
          c.backward(ctx.num_threads);
        else
          c.forward(ctx.num_threads);
      }))
    return Status(StatusCode::internal, "causal_conv1d: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::causal_conv1d_ns
