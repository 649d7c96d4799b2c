// training/layer_norm/reference.cpp: the golden (accuracy.md): the README's formulas in fp64, one
// row at a time (two passes for the mean and the variance), each output rounded once; dweight and
// dbias summed over all rows in fp64. Includes params.h and core only; shares no code with cpu/
// or cuda/.
#include <cmath>
#include <vector>

#include "ops/training/layer_norm/impls.h"

namespace recops::ops::layer_norm_ns {
namespace {
template <class T>
void compute(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const T* dy = static_cast<const T*>(p.grad);
  T* out = static_cast<T*>(p.out);
  const int64_t D = p.D;
  const double Dd = static_cast<double>(D);
  auto wt = [&](int64_t d) { return w ? to_double(w[d]) : 1.0; };
  auto bs = [&](int64_t d) { return b ? to_double(b[d]) : 0.0; };
  std::vector<double> dw(static_cast<size_t>(D), 0.0), db(static_cast<size_t>(D), 0.0);
  std::vector<double> n(static_cast<size_t>(D)), h(static_cast<size_t>(D));
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t k0 = row * D;
    double mu = 0;
    for (int64_t d = 0; d < D; ++d) mu += to_double(x[k0 + d]);
    mu /= Dd;
    double var = 0;
    for (int64_t d = 0; d < D; ++d) {
      const double c = to_double(x[k0 + d]) - mu;
      var += c * c;
    }
    const double r = 1.0 / std::sqrt(var / Dd + p.eps);
    for (int64_t d = 0; d < D; ++d) n[d] = (to_double(x[k0 + d]) - mu) * r;
    if (!p.backward) {
      for (int64_t d = 0; d < D; ++d) {
        const double y0 = n[d] * wt(d) + bs(d);
        const double y = p.swish ? to_double(x[k0 + d]) / (1.0 + std::exp(-y0)) : y0;
        out[k0 + d] = from_double<T>(y);
      }
      continue;
    }
    // h: the gradient reaching y0; g = h·w; dx = r·(g − mean g − n·mean(g·n)) (+ dy·σ(y0)).
    double mg = 0, mgn = 0;
    for (int64_t d = 0; d < D; ++d) {
      const double g = to_double(dy[k0 + d]);
      if (p.swish) {
        const double s = 1.0 / (1.0 + std::exp(-(n[d] * wt(d) + bs(d))));
        h[d] = g * to_double(x[k0 + d]) * s * (1.0 - s);
      } else {
        h[d] = g;
      }
      mg += h[d] * wt(d);
      mgn += h[d] * wt(d) * n[d];
    }
    mg /= Dd;
    mgn /= Dd;
    for (int64_t d = 0; d < D; ++d) {
      double dx = r * (h[d] * wt(d) - mg - n[d] * mgn);
      if (p.swish) dx += to_double(dy[k0 + d]) / (1.0 + std::exp(-(n[d] * wt(d) + bs(d))));
      out[k0 + d] = from_double<T>(dx);
      dw[static_cast<size_t>(d)] += h[d] * n[d];
      db[static_cast<size_t>(d)] += h[d];
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
    return Status(StatusCode::internal, "layer_norm: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::layer_norm_ns
