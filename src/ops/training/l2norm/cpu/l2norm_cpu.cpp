// training/l2norm/cpu/l2norm_cpu.cpp: cpu_generic on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, vectorisable lane sums. Forward statistics in fp32
// (fp64 for fp64); the backward recomputes y = x·r and works in fp64 for every dtype: dy − y·Σdy·y
// cancels where dy is nearly parallel to y (as rms_norm_bwd, README).
#include <cmath>

#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/l2norm/impls.h"

namespace recops::ops::l2norm_ns {
namespace {
using training::acc_t;
using training::ld;
using training::row_sum;
using training::st;

// 1 / sqrt(Σ x² + eps) in A.
template <class A, class T>
A rstd_of(const T* x, int64_t D, double eps) {
  return A(1) / std::sqrt(training::row_sum_sq<A>(x, D) + static_cast<A>(eps));
}

template <class T, class Y>
void compute(const Params& p, int threads) {
  using Acc = acc_t<T>;
  const int64_t D = p.D;
  training::for_rows(p.rows, D, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      if (!p.backward) {
        Y* yr = static_cast<Y*>(p.out) + row * D;
        const Acc r = rstd_of<Acc>(xr, D, p.eps);
        for (int64_t d = 0; d < D; ++d) yr[d] = st<Y>(ld(xr[d]) * r);
        continue;
      }
      const Y* gr = static_cast<const Y*>(p.grad) + row * D;
      T* dxr = static_cast<T*>(p.out) + row * D;
      const double r = rstd_of<double>(xr, D, p.eps);
      // Σ dy·y = r·Σ dy·x; dx = r·dy − r·y·(Σ dy·y) = r·dy − r³·(Σ dy·x)·x
      const double s =
          row_sum<double>(D, [&](int64_t d) { return static_cast<double>(ld(gr[d])) * ld(xr[d]); });
      const double k = r * r * r * s;
      for (int64_t d = 0; d < D; ++d)
        dxr[d] = st<T>(r * static_cast<double>(ld(gr[d])) - k * ld(xr[d]));
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!training::visit_floating2(p.dtype, p.y_dtype, [&](auto t, auto u) {
        compute<decltype(t), decltype(u)>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal, "l2norm: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::l2norm_ns
