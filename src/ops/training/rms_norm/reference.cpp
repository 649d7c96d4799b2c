// training/rms_norm/reference.cpp: the golden (accuracy.md): training_ops.md §3.3's formulas in
// fp64, one row at a time, each output rounded once to its dtype. Includes params.h and core only;
// shares no code with cpu/ or cuda/.
#include <cmath>
#include <vector>

#include "ops/training/rms_norm/impls.h"

namespace recops::ops::rms_norm_ns {
namespace {
template <class T>
double get(const void* p, int64_t i) {
  return to_double(static_cast<const T*>(p)[i]);
}
template <class T>
void put(void* p, int64_t i, double v) {
  static_cast<T*>(p)[i] = from_double<T>(v);
}

// Reads element i of a tensor of dtype t as double.
double get_any(DType t, const void* p, int64_t i) {
  double v = 0;
  visit_floating(t, [&](auto z) { v = get<decltype(z)>(p, i); });
  return v;
}
void put_any(DType t, void* p, int64_t i, double v) {
  visit_floating(t, [&](auto z) { put<decltype(z)>(p, i, v); });
}

template <class T>
void compute(const Params& p) {
  const int64_t D = p.D;
  std::vector<double> dw(p.dweight ? static_cast<size_t>(D) : 0, 0.0);
  for (int64_t row = 0; row < p.rows; ++row) {
    const int64_t base = row * D;
    auto X = [&](int64_t d) { return get<T>(p.x, base + d); };
    auto Wt = [&](int64_t d) { return p.weight ? p.weight_offset + get<T>(p.weight, d) : 1.0; };
    double ss = 0;
    for (int64_t d = 0; d < D; ++d) ss += X(d) * X(d);
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(D) + p.eps);
    switch (p.mode) {
      case Mode::norm:
        for (int64_t d = 0; d < D; ++d) put<T>(p.out, base + d, X(d) * r * Wt(d));
        break;
      case Mode::rstd: put_any(p.r_dtype, p.out, row, r); break;
      case Mode::norm_bwd: {
        auto G = [&](int64_t d) { return get<T>(p.grad, base + d) * Wt(d); };
        double c = 0;
        for (int64_t d = 0; d < D; ++d) c += G(d) * X(d);
        c /= static_cast<double>(D);
        for (int64_t d = 0; d < D; ++d) put<T>(p.out, base + d, r * (G(d) - r * r * c * X(d)));
        for (size_t d = 0; d < dw.size(); ++d)
          dw[d] += get<T>(p.grad, base + static_cast<int64_t>(d)) * X(static_cast<int64_t>(d)) * r;
        break;
      }
      case Mode::rstd_bwd: {
        const double dr = get_any(p.r_dtype, p.grad, row);
        for (int64_t d = 0; d < D; ++d)
          put<T>(p.out, base + d, -dr * r * r * r * X(d) / static_cast<double>(D));
        break;
      }
    }
  }
  for (size_t d = 0; d < dw.size(); ++d) put<T>(p.dweight, static_cast<int64_t>(d), dw[d]);
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!visit_floating(p.dtype, [&](auto t) { compute<decltype(t)>(p); }))
    return Status(StatusCode::internal, "rms_norm: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::rms_norm_ns
