// training/layer_norm/cpu/layer_norm_cpu.cpp: cpu_generic on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, vectorisable lane sums, one rounding per output.
// Arithmetic in fp64 for every dtype, as rms_norm_gated (README: x − mean and n·w + b cancel, and
// fp32 misses the single standard there). dweight and dbias go through the kit's fixed-order
// two-stage column sums with fp64 partials (workspace [n, P, D] double).
#include <cmath>
#include <vector>

#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/layer_norm/impls.h"

namespace recops::ops::layer_norm_ns {
namespace {
using training::ld;
using training::mean_rstd;
using training::row_sum;
using training::st;

inline double sigm(double v) {
  return 1.0 / (1.0 + std::exp(-v));
}

template <class T>
void forward(const Params& p, int threads) {
  const int64_t D = p.D;
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  training::for_rows(p.rows, D, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* x = static_cast<const T*>(p.x) + row * D;
      T* y = static_cast<T*>(p.out) + row * D;
      double mu, r;
      mean_rstd(x, D, p.eps, &mu, &r);
      for (int64_t d = 0; d < D; ++d) {
        const double xv = ld(x[d]);
        double y0 = (xv - mu) * r;
        if (w) y0 *= ld(w[d]);
        if (b) y0 += ld(b[d]);
        y[d] = st<T>(p.swish ? xv * sigm(y0) : y0);
      }
    }
  });
}

template <class T>
void backward(const Params& p, int threads) {
  const int64_t D = p.D;
  const double Dd = static_cast<double>(D);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  auto wt = [&](int64_t d) { return w ? static_cast<double>(ld(w[d])) : 1.0; };
  // One row: dx, and the row's dweight / dbias terms added to dwp / dbp (when not null).
  // buf: n, h, and σ(y0) (swish) for the row.
  auto row_bwd = [&](int64_t row, std::vector<double>& buf, double* dwp, double* dbp) {
    double* n = buf.data();
    double* h = n + D;
    double* s = h + D;
    const T* x = static_cast<const T*>(p.x) + row * D;
    const T* dy = static_cast<const T*>(p.grad) + row * D;
    double mu, r;
    mean_rstd(x, D, p.eps, &mu, &r);
    for (int64_t d = 0; d < D; ++d) {
      n[d] = (double(ld(x[d])) - mu) * r;
      const double g = ld(dy[d]);
      if (p.swish) {
        s[d] = sigm(n[d] * wt(d) + (b ? double(ld(b[d])) : 0.0));
        h[d] = g * double(ld(x[d])) * s[d] * (1.0 - s[d]);
      } else {
        h[d] = g;
      }
    }
    const double mg = row_sum<double>(D, [&](int64_t d) { return h[d] * wt(d); }) / Dd;
    const double mgn = row_sum<double>(D, [&](int64_t d) { return h[d] * wt(d) * n[d]; }) / Dd;
    T* dx = static_cast<T*>(p.out) + row * D;
    for (int64_t d = 0; d < D; ++d) {
      double v = r * (h[d] * wt(d) - mg - n[d] * mgn);
      if (p.swish) v += double(ld(dy[d])) * s[d];
      dx[d] = st<T>(v);
    }
    if (dwp)
      for (int64_t d = 0; d < D; ++d) dwp[d] += h[d] * n[d];
    if (dbp)
      for (int64_t d = 0; d < D; ++d) dbp[d] += h[d];
  };
  training::rows_with_weight_grads<T>(p.rows, D, 3 * D, p.dweight, p.dbias,
                                      static_cast<double*>(p.workspace), threads, row_bwd);
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) {
        if (p.backward)
          backward<decltype(t)>(p, ctx.num_threads);
        else
          forward<decltype(t)>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal, "layer_norm: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::layer_norm_ns
