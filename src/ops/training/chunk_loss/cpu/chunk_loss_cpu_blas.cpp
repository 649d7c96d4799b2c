// training/chunk_loss/cpu/chunk_loss_cpu_blas.cpp: the optimized CPU path (named *_blas.cpp: built
// with OpenBLAS when the build has it, CMakeLists.txt). Token chunks of Nc rows in
// order; per chunk the hidden rows are converted to A once, each vocab tile's logits Z = h·Wᵀ (+b)
// come from gemm_nt (training/common/gemm_cpu.h) into the workspace tile, and the rows' statistics
// from ce_row_stats (training/common/ce_row_cpu.h), merged across tiles as lse = logaddexp. The
// backward recomputes Z, turns it into G in place (kept in A: no rounding to the input dtype), and
// adds G·W into dh and Gᵀ·h, colsum(G) into the dW/db accumulators, chunk after chunk (fixed order;
// rounded to the input dtype after each chunk with accum_dtype = input). With one vocab tile (the
// default) the statistics and G come from the same Z. chunk_loss_fwd (p.fused) is the backward with
// a unit gradient that also keeps the forward's statistics and writes the loss: three GEMMs per
// tile where the forward and the backward apart take four.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/chunk_loss/impls.h"
#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/common/gemm_cpu.h"

namespace recops::ops::chunk_loss_ns {
namespace {
using training::ce_load;

template <class A>
A logaddexp(A a, A b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const A m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

template <class T, class A>
T store(A v) {
  if constexpr (std::is_same_v<T, A>)
    return v;
  else if constexpr (std::is_same_v<A, double>)
    return from_double<T>(v);
  else
    return from_float<T>(v);
}

template <class T>
struct Cpu {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const Params& p;
  int threads;
  Layout l;
  A *r_loss, *r_z, *r_w, *r_lse, *z, *hacc, *dhacc, *dwacc, *dbacc;
  const T *h, *w, *b;

  Cpu(const Params& q, int t) : p(q), threads(t), l(layout_of(q)) {
    char* ws = static_cast<char*>(q.workspace);
    r_loss = reinterpret_cast<A*>(ws + l.rows);
    r_z = r_loss + p.N;
    r_w = r_z + p.N;
    r_lse = r_w + p.N;
    z = reinterpret_cast<A*>(ws + l.z);
    hacc = reinterpret_cast<A*>(ws + l.hacc);
    dhacc = reinterpret_cast<A*>(ws + l.dhacc);
    dwacc = reinterpret_cast<A*>(ws + l.dwacc);
    dbacc = reinterpret_cast<A*>(ws + l.dbacc);
    h = static_cast<const T*>(p.hidden);
    w = static_cast<const T*>(p.weight);
    b = static_cast<const T*>(p.bias);
  }

  int64_t label(int64_t i) const {
    return p.labels_int64 ? static_cast<const int64_t*>(p.labels)[i]
                          : static_cast<int64_t>(static_cast<const int32_t*>(p.labels)[i]);
  }
  bool counted(int64_t y) const { return y != p.ignore_index && y >= 0 && y < p.V; }
  A tw(int64_t i) const {
    if (!p.token_weight) return A(1);
    A v = 0;
    visit_floating(p.tw_dtype, [&](auto t) {
      v = ce_load<A>(static_cast<const decltype(t)*>(p.token_weight)[i]);
    });
    return v;
  }
  A cap(A v) const {
    const A c = static_cast<A>(p.softcap);
    return c > 0 ? c * std::tanh(v / c) : v;
  }
  // fn(k) for k < n, elementwise (no order), parallel over blocks of 2^16.
  template <class F>
  void each(int64_t n, F&& fn) const {
    core::parallel_for(n, int64_t{1} << 16, threads, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) fn(k);
    });
  }
  void load_hidden(int64_t r0, int64_t n) {
    core::parallel_for(n, training::gemm_grain(p.D * 16), threads, [&](int64_t i0, int64_t i1) {
      for (int64_t k = i0 * p.D; k < i1 * p.D; ++k) hacc[k] = ce_load<A>(h[r0 * p.D + k]);
    });
  }
  // Z tile [n, vc] of rows r0.. and columns v0..: h·Wᵀ + b.
  void logits(int64_t n, int64_t v0, int64_t vc) {
    training::gemm_nt(n, vc, p.D, hacc, w + v0 * p.D, z, vc, threads);
    if (!b) return;
    core::parallel_for(n, training::gemm_grain(vc * 16), threads, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < vc; ++j) z[i * vc + j] += ce_load<A>(b[v0 + j]);
    });
  }
  // Merges the tile's statistics of the rows that `want` into r_lse (and, forward, the sum of the
  // capped logits into r_loss and the label's capped logit into r_z).
  template <class W>
  void tile_stats(int64_t r0, int64_t n, int64_t v0, int64_t vc, bool fwd, W&& want) {
    core::parallel_for(n, training::gemm_grain(vc * 64), threads, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t row = r0 + i;
        if (!want(row)) continue;
        A lse, sz;
        training::ce_row_stats(z + i * vc, vc, static_cast<A>(p.softcap), &lse, &sz);
        r_lse[row] = logaddexp(r_lse[row], lse);
        if (!fwd) continue;
        r_loss[row] += sz;
        const int64_t y = label(row);
        if (y >= v0 && y < v0 + vc) r_z[row] = cap(z[i * vc + (y - v0)]);
      }
    });
  }

  void forward() {
    for (int64_t i = 0; i < p.N; ++i) r_loss[i] = r_z[i] = 0, r_lse[i] = -INFINITY;
    auto want = [&](int64_t row) { return counted(label(row)); };
    for (int64_t r0 = 0; r0 < p.N; r0 += p.Nc) {
      const int64_t n = std::min(p.Nc, p.N - r0);
      load_hidden(r0, n);
      for (int64_t v0 = 0; v0 < p.V; v0 += p.Vc) {
        const int64_t vc = std::min(p.Vc, p.V - v0);
        logits(n, v0, vc);
        tile_stats(r0, n, v0, vc, true, want);
      }
    }
    finish_loss();
  }

  // The loss and z_loss from the rows' statistics (r_loss: the sum of the capped logits, r_z: the
  // label's capped logit, r_lse), reduced in row order.
  void finish_loss() {
    const bool none = p.reduction == Red::none;
    const A eps = static_cast<A>(p.label_smoothing), lam = static_cast<A>(p.z_loss_scale);
    for (int64_t i = 0; i < p.N; ++i) {
      A l = 0, zl = 0, wi = 0;
      if (counted(label(i))) {
        const A lse = r_lse[i];
        wi = tw(i);
        zl = lam * lse * lse;
        // The smoothing term only when eps != 0 (no 0 * inf from a -inf logit; torch's formula).
        const A smooth = eps != 0 ? eps * (lse - r_loss[i] / static_cast<A>(p.V)) : A(0);
        l = (1 - eps) * (lse - r_z[i]) + smooth + zl;
        l *= wi;
        zl *= wi;
      }
      r_loss[i] = l, r_z[i] = zl, r_w[i] = wi;
    }
    if (none) {
      std::copy(r_loss, r_loss + p.N, static_cast<A*>(p.loss));
      std::copy(r_z, r_z + p.N, static_cast<A*>(p.z_loss));
      return;
    }
    double tl = 0, tz = 0, dn = 0;  // row order, fp64: deterministic whatever the threads
    for (int64_t i = 0; i < p.N; ++i) tl += r_loss[i], tz += r_z[i], dn += r_w[i];
    const double d = p.reduction == Red::mean ? dn : 1.0;
    static_cast<A*>(p.loss)[0] = static_cast<A>(d == 0 ? 0.0 : tl / d);
    static_cast<A*>(p.z_loss)[0] = static_cast<A>(d == 0 ? 0.0 : tz / d);
  }

  // G in place of the Z tile (rows r0.., columns v0..), r_w holding each row's s.
  void grad_tile(int64_t r0, int64_t n, int64_t v0, int64_t vc) {
    const A eps = static_cast<A>(p.label_smoothing), lam = static_cast<A>(p.z_loss_scale);
    const A c = static_cast<A>(p.softcap), smooth = eps / static_cast<A>(p.V);
    core::parallel_for(n, training::gemm_grain(vc * 64), threads, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t row = r0 + i;
        A* zr = z + i * vc;
        const A s = r_w[row];
        if (s == 0) {
          std::fill(zr, zr + vc, A(0));
          continue;
        }
        const A lse = r_lse[row], a = s * (1 + 2 * lam * lse), bias = s * smooth;
        const int64_t y = label(row);
        const bool has_y = y >= v0 && y < v0 + vc;
        const A zy = has_y ? zr[y - v0] : A(0);  // the label's raw logit, before G replaces it
        if (c > 0) {
          for (int64_t j = 0; j < vc; ++j) {
            const A t = std::tanh(zr[j] / c);
            zr[j] = (a * std::exp(c * t - lse) - bias) * (1 - t * t);
          }
        } else {
          for (int64_t j = 0; j < vc; ++j) zr[j] = a * std::exp(zr[j] - lse) - bias;
        }
        if (has_y) {  // the label's column with its one-hot part, from the raw logit
          const A t = c > 0 ? std::tanh(zy / c) : A(0), zc = c > 0 ? c * t : zy;
          const A d = a * std::exp(zc - lse) - bias - s * (1 - eps);
          zr[y - v0] = c > 0 ? d * (1 - t * t) : d;
        }
      }
    });
  }

  // The backward; fused (chunk_loss_fwd): the forward's statistics come from the same logit tiles
  // as G, the upstream gradient is 1 (p.grad is nullptr) and the loss is written at the end, so
  // the logits are computed once per tile as in the backward alone (twice with vocab tiles).
  void backward() {
    const A* grad = static_cast<const A*>(p.grad);
    double dn = 0;
    if (p.reduction == Red::mean)
      for (int64_t i = 0; i < p.N; ++i)
        if (counted(label(i))) dn += static_cast<double>(tw(i));
    for (int64_t i = 0; i < p.N; ++i) {  // r_w: each row's s; r_lse: -inf
      A s = 0;
      if (counted(label(i))) {
        s = (grad ? grad[p.reduction == Red::none ? i : 0] : A(1)) * tw(i);
        if (p.reduction == Red::mean) s = dn == 0 ? A(0) : static_cast<A>(s / dn);
      }
      r_w[i] = s;
      r_lse[i] = -INFINITY;
      if (p.fused) r_loss[i] = r_z[i] = 0;
    }
    // fp32/fp64 inputs: dW accumulates in d_weight itself (no [V, D] workspace, no final copy).
    A* dwa = dw_accumulator(p) ? dwacc : reinterpret_cast<A*>(p.dw);
    each(p.V * p.D, [&](int64_t k) { dwa[k] = A(0); });
    std::fill(dbacc, dbacc + p.V, A(0));
    T* dh = static_cast<T*>(p.dh);
    // The rows whose statistics are needed: those with a gradient, and with the loss every row
    // not ignored.
    auto want = [&](int64_t row) { return p.fused ? counted(label(row)) : r_w[row] != 0; };
    const bool one_tile = p.Vc >= p.V;
    for (int64_t r0 = 0; r0 < p.N; r0 += p.Nc) {
      const int64_t n = std::min(p.Nc, p.N - r0);
      load_hidden(r0, n);
      if (!one_tile)
        for (int64_t v0 = 0; v0 < p.V; v0 += p.Vc) {
          const int64_t vc = std::min(p.Vc, p.V - v0);
          logits(n, v0, vc);
          tile_stats(r0, n, v0, vc, p.fused, want);
        }
      std::fill(dhacc, dhacc + n * p.D, A(0));
      for (int64_t v0 = 0; v0 < p.V; v0 += p.Vc) {
        const int64_t vc = std::min(p.Vc, p.V - v0);
        logits(n, v0, vc);
        if (one_tile) tile_stats(r0, n, v0, vc, p.fused, want);
        grad_tile(r0, n, v0, vc);
        training::gemm_nn_acc(n, p.D, vc, z, vc, w + v0 * p.D, dhacc, threads);
        training::gemm_tn_acc(vc, p.D, n, z, vc, hacc, dwa + v0 * p.D, dbacc + v0, threads);
      }
      each(n * p.D, [&](int64_t k) { dh[r0 * p.D + k] = store<T>(dhacc[k]); });
      if (p.accum_low) {  // dW/db accumulated in the input dtype: one rounding per chunk
        each(p.V * p.D, [&](int64_t k) { dwacc[k] = ce_load<A>(store<T>(dwacc[k])); });
        for (int64_t k = 0; k < p.V; ++k) dbacc[k] = ce_load<A>(store<T>(dbacc[k]));
      }
    }
    if (dwa == dwacc) {
      T* dw = static_cast<T*>(p.dw);
      each(p.V * p.D, [&](int64_t k) { dw[k] = store<T>(dwacc[k]); });
    }
    if (p.db) {
      T* db = static_cast<T*>(p.db);
      for (int64_t k = 0; k < p.V; ++k) db[k] = store<T>(dbacc[k]);
    }
    if (p.fused) finish_loss();
  }
};
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) {
        Cpu<decltype(t)> c(p, ctx.num_threads);
        if (p.bwd)
          c.backward();
        else
          c.forward();
      }))
    return Status(StatusCode::internal, "chunk_loss: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_loss_ns
