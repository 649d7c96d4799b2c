// training/norm_mul_dropout/cpu/norm_mul_dropout_cpu.cpp: cpu_generic on the family's row kit
// (common/row_norm_cpu.h): rows in parallel, per group vectorisable lane sums, fp64 arithmetic
// (as layer_norm: x − mean and the backward cancel), one rounding per output; the dropout mask
// from common/counter_rng.h; dweight and dbias through the kit's fixed-order two-stage column sums
// with fp64 partials (workspace [2, P, nw] double).
#include <cmath>
#include <vector>

#include "ops/training/common/counter_rng.h"
#include "ops/training/common/row_norm_cpu.h"
#include "ops/training/norm_mul_dropout/impls.h"

namespace recops::ops::norm_mul_dropout_ns {
namespace {
using training::ld;
using training::mean_rstd;
using training::row_sum;
using training::st;

// The row geometry and the dropout of one call.
struct Geo {
  const Params& p;
  int64_t D, H, L, W, yoff;
  double scale;  // 1 / (1 - p)
  explicit Geo(const Params& q)
      : p(q),
        D(q.D),
        H(q.heads),
        L(q.D / q.heads),
        W(q.concat_ux ? 3 * q.D : q.D),
        yoff(q.concat_ux ? 2 * q.D : 0),
        scale(1.0 / (1.0 - static_cast<double>(q.ratio))) {}
  double drop(double v, int64_t row, int64_t c) const {
    if (!p.dropout) return v;
    const uint64_t e = p.offset + static_cast<uint64_t>(row * W + c);
    return training::dropout_keep(p.seed, e, p.ratio) ? v * scale : 0.0;
  }
  int64_t widx(int64_t d) const { return p.group_norm ? d / L : d; }
};

template <class T>
void forward(const Params& p, int threads) {
  const Geo g(p);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  training::for_rows(p.rows, g.W, threads, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      T* out = static_cast<T*>(p.out) + row * g.W;
      for (int64_t c0 = 0; c0 < g.D; c0 += g.L) {
        const T* x = static_cast<const T*>(p.x) + row * g.D + c0;
        const T* u = static_cast<const T*>(p.u) + row * g.D + c0;
        double mu, r;
        mean_rstd(x, g.L, p.eps, &mu, &r);
        for (int64_t j = 0; j < g.L; ++j) {
          const int64_t d = c0 + j;
          const double xv = ld(x[j]), uv = ld(u[j]);
          const double lnv = (xv - mu) * r * double(ld(w[g.widx(d)])) + double(ld(b[g.widx(d)]));
          out[g.yoff + d] = st<T>(g.drop(uv * lnv, row, g.yoff + d));
          if (p.concat_ux) {
            out[d] = st<T>(g.drop(uv, row, d));
            out[g.D + d] = st<T>(g.drop(xv, row, g.D + d));
          }
        }
      }
    }
  });
}

template <class T>
void backward(const Params& p, int threads) {
  const Geo g(p);
  const T* w = static_cast<const T*>(p.weight);
  const T* b = static_cast<const T*>(p.bias);
  const int64_t nw = p.group_norm ? g.H : g.D;
  // One row: dx, du, and its dweight / dbias terms added to dwp / dbp. buf: n, gy·u (2·L).
  auto row_bwd = [&](int64_t row, std::vector<double>& buf, double* dwp, double* dbp) {
    double* n = buf.data();
    double* h = n + g.L;  // gy·u: the gradient reaching ln
    const T* go = static_cast<const T*>(p.grad) + row * g.W;
    for (int64_t c0 = 0; c0 < g.D; c0 += g.L) {
      const int64_t base = row * g.D + c0;
      const T* x = static_cast<const T*>(p.x) + base;
      const T* u = static_cast<const T*>(p.u) + base;
      double mu, r;
      mean_rstd(x, g.L, p.eps, &mu, &r);
      for (int64_t j = 0; j < g.L; ++j) {
        const int64_t d = c0 + j;
        n[j] = (double(ld(x[j])) - mu) * r;
        h[j] = g.drop(ld(go[g.yoff + d]), row, g.yoff + d) * double(ld(u[j]));
      }
      auto wt = [&](int64_t j) { return double(ld(w[g.widx(c0 + j)])); };
      const double Ld = static_cast<double>(g.L);
      const double mg = row_sum<double>(g.L, [&](int64_t j) { return h[j] * wt(j); }) / Ld;
      const double mgn = row_sum<double>(g.L, [&](int64_t j) { return h[j] * wt(j) * n[j]; }) / Ld;
      T* dx = static_cast<T*>(p.out) + base;
      T* du = static_cast<T*>(p.du) + base;
      for (int64_t j = 0; j < g.L; ++j) {
        const int64_t d = c0 + j;
        const double gy = g.drop(ld(go[g.yoff + d]), row, g.yoff + d);
        double dxv = r * (h[j] * wt(j) - mg - n[j] * mgn);
        double duv = gy * (n[j] * wt(j) + double(ld(b[g.widx(d)])));
        if (p.concat_ux) {
          duv += g.drop(ld(go[d]), row, d);
          dxv += g.drop(ld(go[g.D + d]), row, g.D + d);
        }
        dx[j] = st<T>(dxv);
        du[j] = st<T>(duv);
      }
      if (p.group_norm) {
        dwp[c0 / g.L] += row_sum<double>(g.L, [&](int64_t j) { return h[j] * n[j]; });
        dbp[c0 / g.L] += row_sum<double>(g.L, [&](int64_t j) { return h[j]; });
      } else {
        for (int64_t j = 0; j < g.L; ++j) {
          dwp[c0 + j] += h[j] * n[j];
          dbp[c0 + j] += h[j];
        }
      }
    }
  };
  T* outs[2] = {static_cast<T*>(p.dweight), static_cast<T*>(p.dbias)};
  training::column_grads(p.rows, nw, 2, static_cast<double*>(p.workspace), outs, threads,
                         [&](int64_t row, double* const* part) {
                           thread_local std::vector<double> buf;
                           buf.resize(static_cast<size_t>(2 * g.L));
                           row_bwd(row, buf, part[0], part[1]);
                         });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) {
        if (p.backward)
          backward<decltype(t)>(p, ctx.num_threads);
        else
          forward<decltype(t)>(p, ctx.num_threads);
      }))
    return Status(StatusCode::internal, "norm_mul_dropout: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::norm_mul_dropout_ns
