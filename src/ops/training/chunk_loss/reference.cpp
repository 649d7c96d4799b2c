// training/chunk_loss/reference.cpp: the golden (accuracy.md, training_ops.md §5): plain loops over
// one full row of logits at a time, z_ij = Σ_d h_id W_jd + b_j in fp64, the two-pass softmax of
// §3.1, every sum in fp64, each output rounded once. With p.plain, the double standard's plain
// baseline: the logit sums in fp32 (fp64 for fp64) rounded to the input dtype (F.linear), G rounded
// to the input dtype, the dh/dW/db sums in fp32, as the torch composition in that dtype computes.
// Includes params.h and core only.
#include <cmath>
#include <type_traits>
#include <vector>

#include "ops/training/chunk_loss/impls.h"

namespace recops::ops::chunk_loss_ns {
namespace {

template <class T>
struct Golden {
  using S = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the plain sums
  const Params& p;
  std::vector<double> z, zc;  // one row: raw logits, capped logits

  explicit Golden(const Params& q) : p(q), z(static_cast<size_t>(q.V)), zc(z.size()) {}

  double in(const void* base, int64_t k) const { return to_double(static_cast<const T*>(base)[k]); }
  double round_t(double v) const { return p.plain ? to_double(from_double<T>(v)) : v; }
  int64_t label(int64_t i) const {
    return p.labels_int64 ? static_cast<const int64_t*>(p.labels)[i]
                          : static_cast<int64_t>(static_cast<const int32_t*>(p.labels)[i]);
  }
  bool counted(int64_t i) const {
    const int64_t y = label(i);
    return y != p.ignore_index && y >= 0 && y < p.V;
  }
  double tw(int64_t i) const {
    if (!p.token_weight) return 1.0;
    double v = 0;
    visit_floating(p.tw_dtype, [&](auto t) {
      v = to_double(static_cast<const decltype(t)*>(p.token_weight)[i]);
    });
    return v;
  }
  // Row i's logits into z (raw) and zc (capped); returns lse.
  double row(int64_t i) {
    const double cap = p.softcap;
    for (int64_t j = 0; j < p.V; ++j) {
      double acc = 0;
      S plain_acc = 0;
      for (int64_t d = 0; d < p.D; ++d) {
        const double prod = in(p.hidden, i * p.D + d) * in(p.weight, j * p.D + d);
        acc += prod;
        plain_acc += static_cast<S>(prod);
      }
      const double b = p.bias ? in(p.bias, j) : 0.0;
      z[j] = p.plain ? round_t(static_cast<double>(plain_acc + static_cast<S>(b))) : acc + b;
      zc[j] = cap > 0 ? cap * std::tanh(z[j] / cap) : z[j];
    }
    double m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < p.V; ++j) m = std::max(m, zc[j]), nan = nan || std::isnan(zc[j]);
    // A NaN logit gives lse NaN (std::max passes over it: a row of NaN only gave m = -inf, then
    // lse -inf); a row of -inf only -inf (log 0, torch.logsumexp's).
    if (nan) return NAN;
    if (m == -INFINITY) return m;
    double s = 0;
    for (int64_t j = 0; j < p.V; ++j) s += std::exp(zc[j] - m);
    return m + std::log(s);
  }
  double denom() const {
    double dn = 0;
    for (int64_t i = 0; i < p.N; ++i)
      if (counted(i)) dn += tw(i);
    return dn;
  }

  void forward() {
    const bool none = p.reduction == Red::none;
    const double eps = p.label_smoothing, lam = p.z_loss_scale;
    double tl = 0, tz = 0;
    for (int64_t i = 0; i < p.N; ++i) {
      double l = 0, zl = 0;
      if (counted(i)) {
        const double lse = row(i);
        double sz = 0;
        for (int64_t j = 0; j < p.V; ++j) sz += zc[j];
        const double w = tw(i);
        zl = w * lam * lse * lse;
        // The smoothing term only when eps != 0 (torch's formula; no 0 * inf from a -inf logit).
        const double smooth = eps != 0 ? eps * (lse - sz / static_cast<double>(p.V)) : 0.0;
        l = w * ((1 - eps) * (lse - zc[label(i)]) + smooth) + zl;
      }
      if (none) {
        store(p.loss, i, l);
        store(p.z_loss, i, zl);
      }
      tl += l;
      tz += zl;
    }
    if (none) return;
    const double d = p.reduction == Red::mean ? denom() : 1.0;
    store(p.loss, 0, d == 0 ? 0.0 : tl / d);
    store(p.z_loss, 0, d == 0 ? 0.0 : tz / d);
  }

  // The statistics' dtype (fp32, fp64 for fp64).
  static void store(void* base, int64_t k, double v) {
    static_cast<S*>(base)[k] = static_cast<S>(v);
  }
  double grad_in(int64_t i) const {
    if (!p.grad) return 1.0;  // chunk_loss_fwd: a unit upstream gradient
    return static_cast<double>(static_cast<const S*>(p.grad)[p.reduction == Red::none ? i : 0]);
  }

  void backward() {
    const double eps = p.label_smoothing, lam = p.z_loss_scale, cap = p.softcap;
    const double dn = p.reduction == Red::mean ? denom() : 1.0;
    const size_t VD = static_cast<size_t>(p.V * p.D);
    std::vector<double> dw(VD, 0.0), db(static_cast<size_t>(p.V), 0.0), g(z.size());
    std::vector<S> dw_plain(p.plain ? VD : 0, S(0)), db_plain(p.plain ? z.size() : 0, S(0));
    T* dh = static_cast<T*>(p.dh);
    for (int64_t i = 0; i < p.N; ++i) {
      double s = 0;
      if (counted(i)) s = dn == 0 ? 0.0 : grad_in(i) * tw(i) / dn;
      if (s == 0) {
        for (int64_t d = 0; d < p.D; ++d) dh[i * p.D + d] = from_double<T>(0.0);
        continue;
      }
      const double lse = row(i);
      const int64_t y = label(i);
      for (int64_t j = 0; j < p.V; ++j) {
        double gj = (1 + 2 * lam * lse) * std::exp(zc[j] - lse) - (j == y ? 1 - eps : 0.0) -
                    eps / static_cast<double>(p.V);
        if (cap > 0) {
          const double t = std::tanh(z[j] / cap);
          gj *= 1 - t * t;
        }
        g[j] = round_t(s * gj);
      }
      for (int64_t d = 0; d < p.D; ++d) {
        double acc = 0;
        S plain_acc = 0;
        for (int64_t j = 0; j < p.V; ++j) {
          const double prod = g[j] * in(p.weight, j * p.D + d);
          acc += prod;
          plain_acc += static_cast<S>(prod);
        }
        dh[i * p.D + d] = from_double<T>(p.plain ? static_cast<double>(plain_acc) : acc);
      }
      for (int64_t j = 0; j < p.V; ++j) {
        for (int64_t d = 0; d < p.D; ++d) {
          const double prod = g[j] * in(p.hidden, i * p.D + d);
          dw[j * p.D + d] += prod;
          if (p.plain) dw_plain[j * p.D + d] += static_cast<S>(prod);
        }
        db[j] += g[j];
        if (p.plain) db_plain[j] += static_cast<S>(g[j]);
      }
    }
    T* dwo = static_cast<T*>(p.dw);
    for (size_t k = 0; k < VD; ++k)
      dwo[k] = from_double<T>(p.plain ? static_cast<double>(dw_plain[k]) : dw[k]);
    if (p.db) {
      T* dbo = static_cast<T*>(p.db);
      for (int64_t j = 0; j < p.V; ++j)
        dbo[j] = from_double<T>(p.plain ? static_cast<double>(db_plain[j]) : db[j]);
    }
  }
};
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) {
        Golden<decltype(t)> g(p);
        if (p.fused) g.forward();  // then the backward with grad 1 (p.grad is nullptr)
        if (p.bwd)
          g.backward();
        else
          g.forward();
      }))
    return Status(StatusCode::internal, "chunk_loss: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_loss_ns
