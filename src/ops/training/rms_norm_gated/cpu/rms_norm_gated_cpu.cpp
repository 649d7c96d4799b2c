// training/rms_norm_gated/cpu/rms_norm_gated_cpu.cpp: cpu_generic on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, per group vectorisable lane sums, one rounding per
// output. Both directions work in fp64 for every dtype (README: y0 = n·w + b cancels where the
// bias meets n·w, dv = r·(g − n·mean(g·n)) where g and n are nearly parallel; fp32 misses the
// single standard in both). dweight and dbias go through the kit's fixed-order two-stage column
// sums with fp64 partials (workspace [n, P, D] double): a column's terms cancel too.
#include <cmath>
#include <vector>

#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/rms_norm_gated/impls.h"

namespace recops::ops::rms_norm_gated_ns {
namespace {
using training::ld;
using training::row_sum;
using training::st;

// The gate a(z) and its derivative a'(z) in A.
template <class A>
struct Gate {
  bool sigmoid;
  A act(A z) const {
    const A s = A(1) / (A(1) + std::exp(-z));
    return sigmoid ? s : z * s;
  }
  A grad(A z) const {
    const A s = A(1) / (A(1) + std::exp(-z));
    return sigmoid ? s * (A(1) - s) : s * (A(1) + z * (A(1) - s));
  }
};

template <class T>
void forward(const Params& p, int threads) {
  const int64_t D = p.D, gs = p.group;
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const Gate<double> gate{p.sigmoid};
  training::for_rows(p.rows, D, threads, [&](int64_t r0, int64_t r1) {
    std::vector<double> v(static_cast<size_t>(gs));
    for (int64_t k0 = r0 * D; k0 < r1 * D; k0 += gs) {  // group by group
      const T* x = static_cast<const T*>(p.x) + k0;
      const T* z = static_cast<const T*>(p.z) + k0;
      T* y = static_cast<T*>(p.out) + k0;
      const int64_t c0 = k0 % D;
      for (int64_t j = 0; j < gs; ++j)
        v[j] = p.norm_before_gate ? ld(x[j]) : ld(x[j]) * gate.act(ld(z[j]));
      const double ss = row_sum<double>(gs, [&](int64_t j) { return v[j] * v[j]; });
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + p.eps);
      for (int64_t j = 0; j < gs; ++j) {
        double y0 = v[j] * r;
        if (w) y0 *= ld(w[c0 + j]);
        if (b) y0 += ld(b[c0 + j]);
        y[j] = st<T>(p.norm_before_gate ? y0 * gate.act(ld(z[j])) : y0);
      }
    }
  });
}

template <class T>
void backward(const Params& p, int threads) {
  const int64_t D = p.D, gs = p.group;
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const Gate<double> gate{p.sigmoid};
  // One row: dx, dz, and the row's dweight / dbias terms added to dwp / dbp (when not null).
  auto row_bwd = [&](int64_t row, std::vector<double>& buf, double* dwp, double* dbp) {
    double* v = buf.data();  // v, then n = v·r
    double* h = v + gs;      // dy·a(z) or dy
    for (int64_t c0 = 0; c0 < D; c0 += gs) {
      const int64_t k0 = row * D + c0;
      const T* x = static_cast<const T*>(p.x) + k0;
      const T* z = static_cast<const T*>(p.z) + k0;
      const T* dy = static_cast<const T*>(p.grad) + k0;
      for (int64_t j = 0; j < gs; ++j) {
        const double a = gate.act(ld(z[j]));
        v[j] = p.norm_before_gate ? ld(x[j]) : ld(x[j]) * a;
        h[j] = p.norm_before_gate ? ld(dy[j]) * a : ld(dy[j]);
      }
      const double ss = row_sum<double>(gs, [&](int64_t j) { return v[j] * v[j]; });
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + p.eps);
      auto wt = [&](int64_t j) { return w ? static_cast<double>(ld(w[c0 + j])) : 1.0; };
      for (int64_t j = 0; j < gs; ++j) v[j] *= r;
      const double c = row_sum<double>(gs, [&](int64_t j) { return h[j] * wt(j) * v[j]; }) /
                       static_cast<double>(gs);
      T* dx = static_cast<T*>(p.out) + k0;
      T* dz = static_cast<T*>(p.dz) + k0;
      for (int64_t j = 0; j < gs; ++j) {
        const double dv = r * (h[j] * wt(j) - v[j] * c), zj = ld(z[j]);
        if (p.norm_before_gate) {
          const double y0 = v[j] * wt(j) + (b ? ld(b[c0 + j]) : 0.0);
          dx[j] = st<T>(dv);
          dz[j] = st<T>(ld(dy[j]) * y0 * gate.grad(zj));
        } else {
          dx[j] = st<T>(dv * gate.act(zj));
          dz[j] = st<T>(dv * ld(x[j]) * gate.grad(zj));
        }
      }
      if (dwp)
        for (int64_t j = 0; j < gs; ++j) dwp[c0 + j] += h[j] * v[j];
      if (dbp)
        for (int64_t j = 0; j < gs; ++j) dbp[c0 + j] += h[j];
    }
  };
  training::rows_with_weight_grads<T>(p.rows, D, 2 * gs, p.dweight, p.dbias,
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
    return Status(StatusCode::internal, "rms_norm_gated: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::rms_norm_gated_ns
