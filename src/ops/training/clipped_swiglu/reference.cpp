// training/clipped_swiglu/reference.cpp: the golden (accuracy.md): the spec's formula (§3.6) in
// fp64, one output element at a time, rounded once to the dtype. Includes params.h and core only.
#include <cmath>

#include "ops/training/clipped_swiglu/impls.h"

namespace recops::ops::clipped_swiglu_ns {
namespace {
template <class T>
void golden(const Params& p) {
  const T* x = static_cast<const T*>(p.x);
  const T* dy = static_cast<const T*>(p.dy);
  T* out = static_cast<T*>(p.out);
  const double L = p.limit, a = p.alpha, b = p.linear_offset;
  for (int64_t r = 0; r < p.rows; ++r) {
    for (int64_t i = 0; i < p.I; ++i) {
      // Positions of the gate and the linear part in the row of x (and of dx).
      const int64_t jg = r * 2 * p.I + (p.interleaved ? 2 * i : i);
      const int64_t ju = r * 2 * p.I + (p.interleaved ? 2 * i + 1 : p.I + i);
      const double g = to_double(x[jg]), u = to_double(x[ju]);
      // torch.clamp: a NaN stays NaN (the comparisons are false).
      double gc = g;
      if (g > L) gc = L;
      double uc = u;
      if (u > L) uc = L;
      if (u < -L) uc = -L;
      const double s = 1.0 / (1.0 + std::exp(-a * gc));
      if (!p.backward) {
        out[r * p.I + i] = from_double<T>(gc * s * (uc + b));
        continue;
      }
      const double d = to_double(dy[r * p.I + i]);
      double dg = 0, du = 0;
      if (g <= L) dg = d * (uc + b) * (s + a * gc * s * (1.0 - s));
      if (u >= -L && u <= L) du = d * gc * s;
      out[jg] = from_double<T>(dg);
      out[ju] = from_double<T>(du);
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { golden<decltype(t)>(p); }))
    return Status(StatusCode::internal, "clipped_swiglu: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::clipped_swiglu_ns
