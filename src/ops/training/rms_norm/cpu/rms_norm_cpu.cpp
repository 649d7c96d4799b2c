// training/rms_norm/cpu/rms_norm_cpu.cpp: cpu_generic on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, per row vectorisable lane sums in Acc (fp32; fp64 for
// fp64), one rounding per output. The backward recomputes r from x in the same row pass; dweight
// goes through the kit's fixed-order two-stage column sum (workspace [P, D] Acc). The backward's
// row statistics and dx are fp64 for every dtype: dx = r·(g − r²c·x) cancels wherever x and g
// are nearly parallel, and fp32 there misses the single standard (README).
#include <cmath>

#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/rms_norm/impls.h"

namespace recops::ops::rms_norm_ns {
namespace {
using training::acc_t;
using training::ld;
using training::row_sum;
using training::st;

// 1 / sqrt(mean of x² + eps) in Acc.
template <class Acc, class T>
Acc rstd_of(const T* x, int64_t D, double eps) {
  return Acc(1) /
         std::sqrt(training::row_sum_sq<Acc>(x, D) / static_cast<Acc>(D) + static_cast<Acc>(eps));
}

template <class T, class R>
void compute(const Params& p, int threads) {
  using Acc = acc_t<T>;
  const int64_t D = p.D;
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.weight);
  T* out = static_cast<T*>(p.out);
  const Acc off = static_cast<Acc>(p.weight_offset);
  // w~_d = weight_offset + weight_d (1 without weight)
  auto wt = [&](int64_t d) { return w ? off + ld(w[d]) : Acc(1); };
  // dx of one row of rms_norm_bwd, in fp64 (returns r for the dweight partials).
  auto norm_bwd_row = [&](int64_t row) {
    const T* xr = x + row * D;
    const T* gr = static_cast<const T*>(p.grad) + row * D;
    T* o = out + row * D;
    auto g = [&](int64_t d) { return static_cast<double>(ld(gr[d])) * wt(d); };
    const double r = rstd_of<double>(xr, D, p.eps);
    const double c =
        row_sum<double>(D, [&](int64_t d) { return g(d) * ld(xr[d]); }) / static_cast<double>(D);
    const double rrc = r * r * c;
    for (int64_t d = 0; d < D; ++d) o[d] = st<T>(r * (g(d) - rrc * ld(xr[d])));
    return static_cast<Acc>(r);
  };
  if (p.mode == Mode::norm_bwd && p.dweight) {
    training::column_grad(p.rows, D, static_cast<Acc*>(p.workspace), static_cast<T*>(p.dweight),
                          threads, [&](int64_t row, Acc* part) {
                            const Acc r = norm_bwd_row(row);
                            const T* xr = x + row * D;
                            const T* gr = static_cast<const T*>(p.grad) + row * D;
                            for (int64_t d = 0; d < D; ++d) part[d] += ld(gr[d]) * ld(xr[d]) * r;
                          });
    return;
  }
  training::for_rows(p.rows, D, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = x + row * D;
      T* o = out + row * D;
      switch (p.mode) {
        case Mode::norm: {
          const Acc r = rstd_of<Acc>(xr, D, p.eps);
          for (int64_t d = 0; d < D; ++d) o[d] = st<T>(ld(xr[d]) * r * wt(d));
          break;
        }
        case Mode::rstd: static_cast<R*>(p.out)[row] = st<R>(rstd_of<Acc>(xr, D, p.eps)); break;
        case Mode::norm_bwd: norm_bwd_row(row); break;
        case Mode::rstd_bwd: {
          const Acc r = rstd_of<Acc>(xr, D, p.eps);
          const Acc dr = static_cast<Acc>(ld(static_cast<const R*>(p.grad)[row]));
          const Acc k = -dr * r * r * r / static_cast<Acc>(D);
          for (int64_t d = 0; d < D; ++d) o[d] = st<T>(k * ld(xr[d]));
          break;
        }
      }
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!training::visit_floating2(p.dtype, p.r_dtype, [&](auto t, auto u) {
        compute<decltype(t), decltype(u)>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal, "rms_norm: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::rms_norm_ns
