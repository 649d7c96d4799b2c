// training/fused_cross_entropy/reference.cpp: the golden (accuracy.md): training_ops.md §3.1's
// formulas in fp64 with the two-pass softmax (max, then the sum of exp), one row at a time, each
// output rounded once to its dtype. Includes params.h and core only; shares no code with cpu/ or
// cuda/.
#include <cmath>
#include <vector>

#include "ops/training/fused_cross_entropy/impls.h"

namespace recops::ops::fused_cross_entropy_ns {
namespace {
double read(DType t, const void* p, int64_t i) {
  double v = 0;
  visit_floating(t, [&](auto z) { v = to_double(static_cast<const decltype(z)*>(p)[i]); });
  return v;
}
void write(DType t, void* p, int64_t i, double v) {
  visit_floating(t, [&](auto z) {
    using T = decltype(z);
    static_cast<T*>(p)[i] = from_double<T>(v);
  });
}

void compute(const Params& p) {
  const DType st = p.dtype == DType::fp64 ? DType::fp64 : DType::fp32;  // the statistics' dtype
  const int64_t N = p.N, V = p.V;
  const double eps = p.label_smoothing, lam = p.z_loss_scale, c = p.softcap;
  auto label = [&](int64_t i) {
    return p.labels_int64 ? static_cast<const int64_t*>(p.labels)[i]
                          : static_cast<int64_t>(static_cast<const int32_t*>(p.labels)[i]);
  };
  auto counted = [&](int64_t i) { return label(i) != p.ignore_index; };
  auto w = [&](int64_t i) { return p.weight ? read(p.weight_dtype, p.weight, i) : 1.0; };
  auto z = [&](int64_t i, int64_t j) {
    const double v = read(p.dtype, p.logits, i * V + j);
    return c > 0 ? c * std::tanh(v / c) : v;
  };
  double dn = 0;  // the mean's denominator
  for (int64_t i = 0; i < N; ++i)
    if (counted(i)) dn += w(i);
  std::vector<double> lse(static_cast<size_t>(N), 0.0);
  for (int64_t i = 0; i < N; ++i) {
    if (!counted(i)) continue;
    double m = -INFINITY;
    bool nan = false;
    for (int64_t j = 0; j < V; ++j) m = std::max(m, z(i, j)), nan = nan || std::isnan(z(i, j));
    double s = 0;
    for (int64_t j = 0; j < V; ++j) s += std::exp(z(i, j) - m);
    // A NaN logit gives lse NaN; a row of -inf only -inf (log 0, as torch.logsumexp), not the
    // -inf - -inf = NaN of the formula; a +inf logit NaN (inf - inf; torch's loss is NaN too).
    lse[i] = nan ? NAN : (m == -INFINITY ? m : m + std::log(s));
  }
  if (!p.bwd) {
    double sum_l = 0, sum_z = 0;
    for (int64_t i = 0; i < N; ++i) {
      write(st, p.lse, i, lse[i]);
      double l = 0, zl = 0;
      if (counted(i)) {
        double mean_z = 0;
        for (int64_t j = 0; j < V; ++j) mean_z += z(i, j);
        mean_z /= static_cast<double>(V);
        zl = lam * lse[i] * lse[i];
        // The smoothing term only when eps != 0 (torch's formula): a -inf logit (a masked
        // vocabulary entry) then leaves the loss finite instead of 0 * inf = NaN.
        l = (1 - eps) * (lse[i] - z(i, label(i))) + (eps != 0 ? eps * (lse[i] - mean_z) : 0.0) + zl;
        l *= w(i);
        zl *= w(i);
      }
      if (p.reduction == Red::none) {
        write(st, p.loss, i, l);
        write(st, p.z_loss, i, zl);
      }
      sum_l += l;
      sum_z += zl;
    }
    if (p.reduction != Red::none) {
      const double d = p.reduction == Red::mean ? dn : 1.0;
      write(st, p.loss, 0, d == 0 ? 0.0 : sum_l / d);
      write(st, p.z_loss, 0, d == 0 ? 0.0 : sum_z / d);
    }
    return;
  }
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    if (counted(i)) {
      const double g = read(st, p.grad, p.reduction == Red::none ? i : 0);
      s = g * w(i);
      if (p.reduction == Red::mean) s = dn == 0 ? 0.0 : s / dn;
    }
    const double l = read(st, p.lse, i);  // the saved lse, as the implementations use it
    for (int64_t j = 0; j < V; ++j) {
      double d = 0;
      if (s != 0) {
        const double pr = std::exp(z(i, j) - l);
        d = (1 + 2 * lam * l) * pr - (j == label(i) ? 1 - eps : 0.0) - eps / static_cast<double>(V);
        d *= s;
        if (c > 0) {
          const double t = std::tanh(read(p.dtype, p.logits, i * V + j) / c);
          d *= 1 - t * t;
        }
      }
      write(p.dtype, p.out, i * V + j, d);
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  compute(p);
  return Status::Ok();
}

}  // namespace recops::ops::fused_cross_entropy_ns
