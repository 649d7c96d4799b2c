// training/mhc_pre_bmm/reference.cpp: the golden (accuracy.md): the spec's formulas
// (training_ops.md §4.1) in fp64, one output element at a time, rounded once to the output's
// dtype. Includes params.h and core only.
#include "ops/training/mhc_pre_bmm/impls.h"

namespace recops::ops::mhc_pre_bmm_ns {
namespace {
// Element e of a tensor of dtype t, as a double.
double get(const void* base, DType t, int64_t e) {
  double v = 0;
  visit_floating(t, [&](auto tag) { v = to_double(static_cast<const decltype(tag)*>(base)[e]); });
  return v;
}
// Stores v, rounded once, as element e of a tensor of dtype t.
void put(void* base, DType t, int64_t e, double v) {
  visit_floating(t, [&](auto tag) {
    using T = decltype(tag);
    static_cast<T*>(base)[e] = from_double<T>(v);
  });
}

void golden(const Params& p) {
  const int64_t n = p.n, C = p.C;
  for (int64_t t = 0; t < p.tokens; ++t) {
    if (!p.backward) {
      // y_c = Σ_i h_i·X_ic
      for (int64_t c = 0; c < C; ++c) {
        double s = 0;
        for (int64_t i = 0; i < n; ++i)
          s += get(p.h_pre, p.coef_dtype, t * n + i) * get(p.X, p.x_dtype, (t * n + i) * C + c);
        put(p.y, p.y_dtype, t * C + c, s);
      }
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {
      // dX_ic = dy_c·h_i; dh_i = Σ_c dy_c·X_ic
      const double h = get(p.h_pre, p.coef_dtype, t * n + i);
      double s = 0;
      for (int64_t c = 0; c < C; ++c) {
        const double d = get(p.dy, p.y_dtype, t * C + c);
        put(p.dX, p.x_dtype, (t * n + i) * C + c, d * h);
        s += d * get(p.X, p.x_dtype, (t * n + i) * C + c);
      }
      put(p.dh_pre, p.coef_dtype, t * n + i, s);
    }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  for (DType t : {p.x_dtype, p.coef_dtype, p.y_dtype})
    if (!is_floating(t) || t == DType::fp8_e4m3)
      return Status(StatusCode::internal, "mhc_pre_bmm: reference reached with a bad dtype");
  golden(p);
  return Status::Ok();
}

}  // namespace recops::ops::mhc_pre_bmm_ns
