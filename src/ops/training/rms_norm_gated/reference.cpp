// training/rms_norm_gated/reference.cpp: the golden (accuracy.md): training_ops.md §3.4's formulas
// in fp64, one row and group at a time, each output rounded once; dweight and dbias summed over
// all rows in fp64. Includes params.h and core only; shares no code with cpu/ or cuda/.
#include <cmath>
#include <vector>

#include "ops/training/rms_norm_gated/impls.h"

namespace recops::ops::rms_norm_gated_ns {
namespace {
double sigm(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

template <class T>
void compute(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* z = static_cast<const T*>(p.z);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const T* dy = static_cast<const T*>(p.grad);
  const int64_t D = p.D, gs = p.group;
  auto act = [&](double v) { return p.sigmoid ? sigm(v) : v * sigm(v); };
  auto act_grad = [&](double v) {  // a'(z)
    const double s = sigm(v);
    return p.sigmoid ? s * (1.0 - s) : s * (1.0 + v * (1.0 - s));
  };
  auto wt = [&](int64_t d) { return w ? to_double(w[d]) : 1.0; };
  auto bs = [&](int64_t d) { return b ? to_double(b[d]) : 0.0; };
  std::vector<double> dw(static_cast<size_t>(D), 0.0), db(static_cast<size_t>(D), 0.0);
  std::vector<double> v(static_cast<size_t>(gs)), n(static_cast<size_t>(gs));
  for (int64_t row = 0; row < p.rows; ++row) {
    for (int64_t k0 = row * D; k0 < (row + 1) * D; k0 += gs) {
      const int64_t c0 = k0 - row * D;  // the group's first column
      double ss = 0;
      for (int64_t j = 0; j < gs; ++j) {
        const double xv = to_double(x[k0 + j]);
        v[j] = p.norm_before_gate ? xv : xv * act(to_double(z[k0 + j]));
        ss += v[j] * v[j];
      }
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + p.eps);
      for (int64_t j = 0; j < gs; ++j) n[j] = v[j] * r;
      if (!p.backward) {
        for (int64_t j = 0; j < gs; ++j) {
          const double y0 = n[j] * wt(c0 + j) + bs(c0 + j);
          const double y = p.norm_before_gate ? y0 * act(to_double(z[k0 + j])) : y0;
          static_cast<T*>(p.out)[k0 + j] = from_double<T>(y);
        }
        continue;
      }
      // h = dy·a(z) or dy; g = h·w; dv = r·(g − n·mean(g·n))
      auto h = [&](int64_t j) {
        const double g = to_double(dy[k0 + j]);
        return p.norm_before_gate ? g * act(to_double(z[k0 + j])) : g;
      };
      double c = 0;
      for (int64_t j = 0; j < gs; ++j) c += h(j) * wt(c0 + j) * n[j];
      c /= static_cast<double>(gs);
      for (int64_t j = 0; j < gs; ++j) {
        const double xv = to_double(x[k0 + j]), zv = to_double(z[k0 + j]);
        const double dv = r * (h(j) * wt(c0 + j) - n[j] * c);
        double dx, dz;
        if (p.norm_before_gate) {
          dx = dv;
          dz = to_double(dy[k0 + j]) * (n[j] * wt(c0 + j) + bs(c0 + j)) * act_grad(zv);
        } else {
          dx = dv * act(zv);
          dz = dv * xv * act_grad(zv);
        }
        static_cast<T*>(p.out)[k0 + j] = from_double<T>(dx);
        static_cast<T*>(p.dz)[k0 + j] = from_double<T>(dz);
        dw[static_cast<size_t>(c0 + j)] += h(j) * n[j];
        db[static_cast<size_t>(c0 + j)] += h(j);
      }
    }
  }
  if (!p.backward) return;
  for (int64_t d = 0; d < D; ++d) {
    if (p.dweight) static_cast<T*>(p.dweight)[d] = from_double<T>(dw[static_cast<size_t>(d)]);
    if (p.dbias) static_cast<T*>(p.dbias)[d] = from_double<T>(db[static_cast<size_t>(d)]);
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p); }))
    return Status(StatusCode::internal, "rms_norm_gated: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::rms_norm_gated_ns
