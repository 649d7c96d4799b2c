// training/fused_cross_entropy/cpu/fused_cross_entropy_cpu.cpp: the optimized CPU path. Rows in
// parallel (core::parallel_for, static chunks); each row is read once for its statistics: blocks of
// kBlock logits are converted to A (fp32, fp64 for fp64) in a local buffer, their max found, the
// running sum rescaled when the max grows (online softmax), then the block's exp and plain sums
// taken over kLanes independent lanes (vectorisable, fixed order). The backward reads each row
// once more and writes dlogits. The "sum"/"mean" totals add per-row values in row order.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/fused_cross_entropy/impls.h"

namespace recops::ops::fused_cross_entropy_ns {
namespace {
constexpr int64_t kBlock = 256;
constexpr int kLanes = 8;

template <class A, class T>
A load(T v) {
  if constexpr (std::is_same_v<A, double>)
    return to_double(v);
  else
    return to_float(v);
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

template <class A>
A lane_sum(const A (&v)[kLanes]) {
  A s = 0;
  for (int l = 0; l < kLanes; ++l) s += v[l];
  return s;
}

// The row's lse and sum of its (capped) logits, in one read of the row.
template <class T, class A>
void row_stats(const T* z, int64_t V, A cap, A* lse, A* sum_z) {
  A buf[kBlock];
  A m = -INFINITY, s = 0, sz = 0;
  for (int64_t b0 = 0; b0 < V; b0 += kBlock) {
    const int64_t n = std::min(kBlock, V - b0);
    for (int64_t k = 0; k < n; ++k) buf[k] = load<A>(z[b0 + k]);
    if (cap > 0)
      for (int64_t k = 0; k < n; ++k) buf[k] = cap * std::tanh(buf[k] / cap);
    A lm[kLanes], ls[kLanes] = {}, lz[kLanes] = {};
    std::fill(lm, lm + kLanes, A(-INFINITY));
    int64_t k = 0;
    for (; k + kLanes <= n; k += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        lm[l] = std::max(lm[l], buf[k + l]);
        lz[l] += buf[k + l];
      }
    for (; k < n; ++k) {
      lm[0] = std::max(lm[0], buf[k]);
      lz[0] += buf[k];
    }
    sz += lane_sum(lz);
    const A bm = *std::max_element(lm, lm + kLanes);
    if (bm > m) {
      s = m == -INFINITY ? A(0) : s * std::exp(m - bm);
      m = bm;
    }
    if (m == -INFINITY) continue;  // every logit so far is -inf
    for (k = 0; k + kLanes <= n; k += kLanes)
      for (int l = 0; l < kLanes; ++l) ls[l] += std::exp(buf[k + l] - m);
    for (; k < n; ++k) ls[0] += std::exp(buf[k] - m);
    s += lane_sum(ls);
  }
  *lse = m + std::log(s);
  *sum_z = sz;
}

template <class T>
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
  core::parallel_for(p.N, std::max<int64_t>(1, 16384 / V), threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t y = label_at(p, i);
      A r_lse = 0, r_loss = 0, r_z = 0, r_w = 0;
      if (y != p.ignore_index && y >= 0 && y < V) {
        const T* z = logits + i * V;
        A sum_z;
        row_stats(z, V, cap, &r_lse, &sum_z);
        A zy = load<A>(z[y]);
        if (cap > 0) zy = cap * std::tanh(zy / cap);
        r_w = weight_at<A>(p, i);
        r_z = lam * r_lse * r_lse;
        r_loss = (1 - eps) * (r_lse - zy) + eps * (r_lse - sum_z / static_cast<A>(V)) + r_z;
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

template <class T>
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
  core::parallel_for(p.N, std::max<int64_t>(1, 16384 / V), threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t y = label_at(p, i);
      T* o = out + i * V;
      A s = 0;
      if (counted(y)) {
        s = grad[p.reduction == Red::none ? i : 0] * weight_at<A>(p, i);
        if (p.reduction == Red::mean) s = dn == 0 ? A(0) : static_cast<A>(s / dn);
      }
      if (s == 0) {
        std::fill(o, o + V, store<T>(A(0)));
        continue;
      }
      const T* z = logits + i * V;
      const A a = s * (1 + 2 * lam * lse[i]), bias = s * smooth, l = lse[i];
      if (cap > 0) {
        for (int64_t j = 0; j < V; ++j) {
          const A t = std::tanh(load<A>(z[j]) / cap);
          const A d = (a * std::exp(cap * t - l) - bias - (j == y ? s * (1 - eps) : A(0)));
          o[j] = store<T>(d * (1 - t * t));
        }
      } else {
        for (int64_t j = 0; j < V; ++j) {
          const A d = a * std::exp(load<A>(z[j]) - l) - bias;
          o[j] = store<T>(d);
        }
        const A t = load<A>(z[y]) - l;  // the label's term, recomputed with its one-hot part
        const A d = a * std::exp(t) - bias - s * (1 - eps);
        o[y] = store<T>(d);
      }
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) {
        if (p.bwd)
          backward<decltype(t)>(p, ctx.num_threads);
        else
          forward<decltype(t)>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal,
                  "fused_cross_entropy: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::fused_cross_entropy_ns
