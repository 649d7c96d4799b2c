// training/rms_norm_gated/cpu/kernel.h: the CPU path on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, per group vectorisable lane sums, one rounding per
// output. Both directions work in fp64 for every dtype (README: y0 = n·w + b cancels where the
// bias meets n·w, dv = r·(g − n·mean(g·n)) where g and n are nearly parallel; fp32 misses the
// single standard in both). σ(z) is taken once per element (the backward keeps it for a and a′).
// dweight and dbias go through the kit's fixed-order two-stage column sums with fp64 partials
// (workspace [n, P, D] double): a column's terms cancel too.
//
// Built twice: cpu_generic (rms_norm_gated_cpu.cpp, baseline flags, std::exp) and cpu_avx2
// (rms_norm_gated_cpu_avx2.cpp, AVX2 + FMA, training::poly_exp64, which the compiler vectorises);
// everything here has internal linkage, so the two copies never merge.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/rms_norm_gated/impls.h"

namespace recops::ops::rms_norm_gated_ns {
namespace {
using training::ld;
using training::row_sum;
using training::st;

// The gate a(z) and its derivative a'(z) in double, from s = σ(z) (E::exp: std::exp or
// training::poly_exp64).
template <class E>
struct Gate {
  bool sigmoid;
  static double sig(double z) { return 1.0 / (1.0 + E::exp(-z)); }
  double act(double z, double s) const { return sigmoid ? s : z * s; }
  double grad(double z, double s) const {
    return sigmoid ? s * (1.0 - s) : s * (1.0 + z * (1.0 - s));
  }
  // u[j] = a(u[j]) for j < n.
  void act_all(int64_t n, double* u) const {
    if (sigmoid)
      for (int64_t j = 0; j < n; ++j) u[j] = sig(u[j]);
    else
      for (int64_t j = 0; j < n; ++j) u[j] = u[j] * sig(u[j]);
  }
  // s[j] = σ(z[j]) for j < n.
  static void sig_all(int64_t n, const double* z, double* s) {
    for (int64_t j = 0; j < n; ++j) s[j] = sig(z[j]);
  }
};

template <class T, class E>
void forward(const Params& p, int threads) {
  const int64_t D = p.D, gs = p.group;
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const Gate<E> gate{p.sigmoid};
  training::for_rows(p.rows, D, threads, [&](int64_t r0, int64_t r1) {
    std::vector<double> buf(static_cast<size_t>(2 * gs));
    double* v = buf.data();
    double* a = v + gs;                                 // a(z)
    for (int64_t k0 = r0 * D; k0 < r1 * D; k0 += gs) {  // group by group
      const T* x = static_cast<const T*>(p.x) + k0;
      const T* z = static_cast<const T*>(p.z) + k0;
      T* y = static_cast<T*>(p.out) + k0;
      const int64_t c0 = k0 % D;
      for (int64_t j = 0; j < gs; ++j) a[j] = ld(z[j]);
      gate.act_all(gs, a);  // z -> a(z), a loop of its own so that it vectorises
      for (int64_t j = 0; j < gs; ++j) v[j] = p.norm_before_gate ? ld(x[j]) : ld(x[j]) * a[j];
      const double ss = row_sum<double>(gs, [&](int64_t j) { return v[j] * v[j]; });
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + p.eps);
      for (int64_t j = 0; j < gs; ++j) {
        double y0 = v[j] * r;
        if (w) y0 *= ld(w[c0 + j]);
        if (b) y0 += ld(b[c0 + j]);
        y[j] = st<T>(p.norm_before_gate ? y0 * a[j] : y0);
      }
    }
  });
}

template <class T, class E>
void backward(const Params& p, int threads) {
  const int64_t D = p.D, gs = p.group;
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const Gate<E> gate{p.sigmoid};
  // One row: dx, dz, and the row's dweight / dbias terms added to dwp / dbp (when not null).
  auto row_bwd = [&](int64_t row, std::vector<double>& buf, double* dwp, double* dbp) {
    double* v = buf.data();  // v, then n = v·r
    double* h = v + gs;      // dy·a(z) or dy
    double* s = h + gs;      // σ(z)
    double* zd = s + gs;     // z
    double* wd = zd + gs;    // weight (or 1)
    double* bd = wd + gs;    // bias (or 0)
    for (int64_t c0 = 0; c0 < D; c0 += gs) {
      const int64_t k0 = row * D + c0;
      const T* x = static_cast<const T*>(p.x) + k0;
      const T* z = static_cast<const T*>(p.z) + k0;
      const T* dy = static_cast<const T*>(p.grad) + k0;
      for (int64_t j = 0; j < gs; ++j) zd[j] = ld(z[j]);
      Gate<E>::sig_all(gs, zd, s);  // a loop of its own so that it vectorises
      for (int64_t j = 0; j < gs; ++j) {
        const double a = gate.act(zd[j], s[j]);
        v[j] = p.norm_before_gate ? ld(x[j]) : ld(x[j]) * a;
        h[j] = p.norm_before_gate ? ld(dy[j]) * a : ld(dy[j]);
      }
      const double ss = row_sum<double>(gs, [&](int64_t j) { return v[j] * v[j]; });
      const double r = 1.0 / std::sqrt(ss / static_cast<double>(gs) + p.eps);
      for (int64_t j = 0; j < gs; ++j) {  // weight and bias as doubles (1 and 0 without)
        wd[j] = w ? static_cast<double>(ld(w[c0 + j])) : 1.0;
        bd[j] = b ? static_cast<double>(ld(b[c0 + j])) : 0.0;
      }
      for (int64_t j = 0; j < gs; ++j) v[j] *= r;
      const double c = row_sum<double>(gs, [&](int64_t j) { return h[j] * wd[j] * v[j]; }) /
                       static_cast<double>(gs);
      T* dx = static_cast<T*>(p.out) + k0;
      T* dz = static_cast<T*>(p.dz) + k0;
      // One loop per gate placement (no branch inside: the fp32/fp64 loops vectorise).
      if (p.norm_before_gate) {
        for (int64_t j = 0; j < gs; ++j) {
          const double dv = r * (h[j] * wd[j] - v[j] * c), y0 = v[j] * wd[j] + bd[j];
          dx[j] = st<T>(dv);
          dz[j] = st<T>(ld(dy[j]) * y0 * gate.grad(zd[j], s[j]));
        }
      } else {
        for (int64_t j = 0; j < gs; ++j) {
          const double dv = r * (h[j] * wd[j] - v[j] * c);
          dx[j] = st<T>(dv * gate.act(zd[j], s[j]));
          dz[j] = st<T>(dv * ld(x[j]) * gate.grad(zd[j], s[j]));
        }
      }
      if (dwp)
        for (int64_t j = 0; j < gs; ++j) dwp[c0 + j] += h[j] * v[j];
      if (dbp)
        for (int64_t j = 0; j < gs; ++j) dbp[c0 + j] += h[j];
    }
  };
  training::rows_with_weight_grads<T>(p.rows, D, 6 * gs, p.dweight, p.dbias,
                                      static_cast<double*>(p.workspace), threads, row_bwd);
}
}  // namespace

template <class E>
Status run(const Params& p, const Context& ctx, const char* id) {
  if (!visit_floating(p.dtype, [&](auto t) {
        if (p.backward)
          backward<decltype(t), E>(p, ctx.num_threads);
        else
          forward<decltype(t), E>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal,
                  std::string("rms_norm_gated: ") + id + " reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::rms_norm_gated_ns
