// training/fused_cross_entropy/cpu/kernel.h: the CPU path, included by the baseline build
// (fused_cross_entropy_cpu.cpp, std::exp: cpu_generic) and the AVX2 + FMA build
// (fused_cross_entropy_cpu_avx2.cpp, training::PolyExp: cpu_avx2). Rows in parallel
// (core::parallel_for, static chunks); each row is read once for its statistics
// (training/common/ce_row_cpu.h: online softmax over blocks, vectorisable lanes, fixed order). The
// backward reads each row once more and writes dlogits. The "sum"/"mean" totals add per-row values
// in row order.
#pragma once

#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/fused_cross_entropy/impls.h"

namespace recops::ops::fused_cross_entropy_ns {
// Internal linkage: the baseline and the AVX2 copies of everything here never merge at link time
// (recops/isa_ns.h); the row loops use no standard-library algorithm templates for the same reason.
namespace {

template <class A, class T>
A load(T v) {
  return training::ce_load<A>(v);
}

template <class T, class A>
T store(A v) {
  if constexpr (std::is_same_v<T, A>)
    return v;
  else
    return from_float<T>(v);
}

template <class A>
A weight_at(const Params& p, int64_t i) {
  if (!p.weight) return A(1);
  A v = 0;
  visit_floating(p.weight_dtype,
                 [&](auto t) { v = load<A>(static_cast<const decltype(t)*>(p.weight)[i]); });
  return v;
}

int64_t label_at(const Params& p, int64_t i) {
  return p.labels_int64 ? static_cast<const int64_t*>(p.labels)[i]
                        : static_cast<int64_t>(static_cast<const int32_t*>(p.labels)[i]);
}

template <class T, class E>
void forward(const Params& p, int threads) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* logits = static_cast<const T*>(p.logits);
  A* lse = static_cast<A*>(p.lse);
  const bool none = p.reduction == Red::none;
  A* loss = static_cast<A*>(none ? p.loss : p.workspace);
  A* zl = none ? static_cast<A*>(p.z_loss) : loss + p.N;
  A* wd = none ? nullptr : loss + 2 * p.N;  // w of counted rows (the mean's denominator)
  const int64_t V = p.V;
  const A cap = static_cast<A>(p.softcap), eps = static_cast<A>(p.label_smoothing);
  const A lam = static_cast<A>(p.z_loss_scale);
  core::parallel_for(
      p.N, (V >= 16384 ? int64_t{1} : 16384 / V), threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t y = label_at(p, i);
          A r_lse = 0, r_loss = 0, r_z = 0, r_w = 0;
          if (y != p.ignore_index && y >= 0 && y < V) {
            const T* z = logits + i * V;
            A sum_z;
            training::ce_row_stats<T, A, E>(z, V, cap, &r_lse, &sum_z);
            A zy = load<A>(z[y]);
            if (cap > 0) zy = cap * std::tanh(zy / cap);
            r_w = weight_at<A>(p, i);
            r_z = lam * r_lse * r_lse;
            // The smoothing term only when eps != 0 (torch's formula): a -inf logit (a masked
            // vocabulary entry) leaves the loss finite instead of 0 * inf = NaN.
            const A smooth = eps != 0 ? eps * (r_lse - sum_z / static_cast<A>(V)) : A(0);
            r_loss = (1 - eps) * (r_lse - zy) + smooth + r_z;
            r_loss *= r_w;
            r_z *= r_w;
          }
          lse[i] = r_lse;
          loss[i] = r_loss;
          zl[i] = r_z;
          if (wd) wd[i] = r_w;
        }
      });
  if (none) return;
  double tl = 0, tz = 0, dn = 0;  // row order, fp64: deterministic whatever the threads
  for (int64_t i = 0; i < p.N; ++i) tl += loss[i], tz += zl[i], dn += wd[i];
  const double d = p.reduction == Red::mean ? dn : 1.0;
  static_cast<A*>(p.loss)[0] = static_cast<A>(d == 0 ? 0.0 : tl / d);
  static_cast<A*>(p.z_loss)[0] = static_cast<A>(d == 0 ? 0.0 : tz / d);
}

template <class T, class E>
void backward(const Params& p, int threads) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* logits = static_cast<const T*>(p.logits);
  const A* lse = static_cast<const A*>(p.lse);
  const A* grad = static_cast<const A*>(p.grad);
  T* out = static_cast<T*>(p.out);
  const int64_t V = p.V;
  auto counted = [&](int64_t y) { return y != p.ignore_index && y >= 0 && y < V; };
  double dn = 0;
  if (p.reduction == Red::mean)
    for (int64_t i = 0; i < p.N; ++i)
      if (counted(label_at(p, i))) dn += load<double>(weight_at<A>(p, i));
  const A cap = static_cast<A>(p.softcap), eps = static_cast<A>(p.label_smoothing);
  const A lam = static_cast<A>(p.z_loss_scale), smooth = eps / static_cast<A>(V);
  core::parallel_for(
      p.N, (V >= 16384 ? int64_t{1} : 16384 / V), threads, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          const int64_t y = label_at(p, i);
          T* o = out + i * V;
          A s = 0;
          if (counted(y)) {
            s = grad[p.reduction == Red::none ? i : 0] * weight_at<A>(p, i);
            if (p.reduction == Red::mean) s = dn == 0 ? A(0) : static_cast<A>(s / dn);
          }
          if (s == 0) {
            const T zero = store<T>(A(0));
            for (int64_t j = 0; j < V; ++j) o[j] = zero;
            continue;
          }
          const T* z = logits + i * V;
          // s multiplies last, as in the golden: a non-finite s, lse or logit then gives the
          // golden's inf or NaN (s folded into the terms made inf - inf = NaN of s = inf).
          const A l = lse[i], a = 1 + 2 * lam * l;
          if (cap > 0) {
            for (int64_t j = 0; j < V; ++j) {
              const A t = std::tanh(load<A>(z[j]) / cap);
              const A d = (a * E::exp(cap * t - l) - smooth - (j == y ? 1 - eps : A(0))) * s;
              o[j] = store<T>(d * (1 - t * t));
            }
          } else {
            for (int64_t j = 0; j < V; ++j) {
              const A d = (a * E::exp(load<A>(z[j]) - l) - smooth) * s;
              o[j] = store<T>(d);
            }
            const A t = load<A>(z[y]) - l;  // the label's term, recomputed with its one-hot part
            const A d = (a * E::exp(t) - smooth - (1 - eps)) * s;
            o[y] = store<T>(d);
          }
        }
      });
}
// The forward or backward of p on the CPU, E::exp for the per-logit exponentials.
template <class E>
Status run(const Params& p, const Context& ctx, const char* impl) {
  if (!visit_floating(p.dtype, [&](auto t) {
        if (p.bwd)
          backward<decltype(t), E>(p, ctx.num_threads);
        else
          forward<decltype(t), E>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal,
                  std::string("fused_cross_entropy: ") + impl + " reached with a bad dtype");
  return Status::Ok();
}

}  // namespace
}  // namespace recops::ops::fused_cross_entropy_ns
