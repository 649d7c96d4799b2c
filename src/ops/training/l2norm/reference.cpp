// training/l2norm/reference.cpp: the golden (accuracy.md): training_ops.md §3.5's formulas in
// fp64, one row at a time, each output rounded once. Includes params.h and core only; shares no
// code with cpu/ or cuda/.
#include <cmath>

#include "ops/training/l2norm/impls.h"

namespace recops::ops::l2norm_ns {
namespace {
template <class T, class Y>
void compute(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  const Y* dy = static_cast<const Y*>(p.grad);
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t base = row * p.D;
    double ss = 0;
    for (int64_t d = 0; d < p.D; ++d) ss += to_double(x[base + d]) * to_double(x[base + d]);
    const double r = 1.0 / std::sqrt(ss + p.eps);
    auto y = [&](int64_t d) { return to_double(x[base + d]) * r; };
    if (!p.backward) {
      for (int64_t d = 0; d < p.D; ++d) static_cast<Y*>(p.out)[base + d] = from_double<Y>(y(d));
      continue;
    }
    double dot = 0;  // Σ dy·y
    for (int64_t d = 0; d < p.D; ++d) dot += to_double(dy[base + d]) * y(d);
    for (int64_t d = 0; d < p.D; ++d)
      static_cast<T*>(p.out)[base + d] = from_double<T>(r * (to_double(dy[base + d]) - y(d) * dot));
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  bool ok = false;
  visit_floating(p.dtype, [&](auto t) {
    ok = visit_floating(p.y_dtype, [&](auto y) { compute<decltype(t), decltype(y)>(p); });
  });
  if (!ok) return Status(StatusCode::internal, "l2norm: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::l2norm_ns
