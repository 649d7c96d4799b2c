// training/norm_mul_dropout/cuda/kernel.cuh: the device code of norm_mul_dropout and its backward
// on the family's row kit (common/cuda/row_norm.cuh), and the per-dtype launchers inst/
// instantiates. Plain first version (not tuned): a warp owns whole rows and walks their groups;
// lane j takes the group's columns j, j + 32, ... with scalar loads (a group is read again from
// L2 on each pass). Arithmetic in fp64 (README); the dropout mask from common/counter_rng.h.
//   fwd: Σ x -> mean; Σ (x − mean)² -> r; then out (y, and u, x with concat_ux).
//   bwd: mean, r; Σ g and Σ g·n with g = drop(dout_y)·u·w; then dx, du. dweight/dbias: each
//        owner (a contiguous range of rows) adds into its own fp64 workspace rows [2, owners, nw]:
//        column d by lane d % 32 (per-column weight) or group k's warp sum by lane k % 32
//        (group_norm), the same lane that zeroed it; column_sum_kernel adds the owners in a fixed
//        order.
// Index math is 64-bit.
#pragma once

#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/common/counter_rng.h"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/norm_mul_dropout/cuda/launch.h"

namespace recops::ops::norm_mul_dropout_ns {

using training_dev::for_owners;
using training_dev::from_float;
using training_dev::group_sum;
using training_dev::row_group;
using training_dev::RowGroup;
using training_dev::to_float;

// The row geometry and dropout of one call (device side).
struct DevGeo {
  int64_t D, L, W, yoff;
  double scale;
  __device__ explicit DevGeo(const Params& p)
      : D(p.D),
        L(p.D / p.heads),
        W(p.concat_ux ? 3 * p.D : p.D),
        yoff(p.concat_ux ? 2 * p.D : 0),
        scale(1.0 / (1.0 - static_cast<double>(p.ratio))) {}
};

__device__ __forceinline__ double drop(const Params& p, const DevGeo& g, double v, int64_t row,
                                       int64_t c) {
  if (!p.dropout) return v;
  const uint64_t e = p.offset + static_cast<uint64_t>(row * g.W + c);
  return training::dropout_keep(p.seed, e, p.ratio) ? v * g.scale : 0.0;
}

template <class T>
__device__ __forceinline__ double ldd(const void* t, int64_t i) {
  return static_cast<double>(to_float(static_cast<const T*>(t)[i]));
}

// mean and r of the L values of x at base (the same bits in every lane of the warp).
template <class T>
__device__ __forceinline__ void group_stats(const Params& p, const DevGeo& g, int64_t base,
                                            const RowGroup& rg, double* smem, double* mu,
                                            double* r) {
  double s = 0;
  for (int64_t j = rg.lane; j < g.L; j += 32) s += ldd<T>(p.x, base + j);
  const double m = group_sum(s, rg, smem) / static_cast<double>(g.L);
  double ss = 0;
  for (int64_t j = rg.lane; j < g.L; j += 32) {
    const double c = ldd<T>(p.x, base + j) - m;
    ss += c * c;
  }
  *mu = m;
  *r = 1.0 / sqrt(group_sum(ss, rg, smem) / static_cast<double>(g.L) + p.eps);
}

template <class T>
__global__ void __launch_bounds__(training_dev::kRowWarpBlock)
    fwd_kernel(Params p, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup rg = row_group(32);
  const DevGeo g(p);
  T* out = static_cast<T*>(p.out);
  for_owners(p.rows, owners, rg, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      for (int64_t c0 = 0; c0 < g.D; c0 += g.L) {
        const int64_t base = row * g.D + c0;
        double mu, r;
        group_stats<T>(p, g, base, rg, smem, &mu, &r);
        for (int64_t j = rg.lane; j < g.L; j += 32) {
          const int64_t d = c0 + j, wi = p.group_norm ? c0 / g.L : d;
          const double xv = ldd<T>(p.x, base + j), uv = ldd<T>(p.u, base + j);
          const double ln = (xv - mu) * r * ldd<T>(p.weight, wi) + ldd<T>(p.bias, wi);
          T* o = out + row * g.W;
          o[g.yoff + d] = from_float<T>(static_cast<float>(drop(p, g, uv * ln, row, g.yoff + d)));
          if (p.concat_ux) {
            o[d] = from_float<T>(static_cast<float>(drop(p, g, uv, row, d)));
            o[g.D + d] = from_float<T>(static_cast<float>(drop(p, g, xv, row, g.D + d)));
          }
        }
      }
    }
  });
}

template <class T>
__global__ void __launch_bounds__(training_dev::kRowWarpBlock)
    bwd_kernel(Params p, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup rg = row_group(32);
  const DevGeo g(p);
  const int64_t nw = p.group_norm ? p.heads : p.D;
  double* ws = static_cast<double*>(p.workspace);
  for_owners(p.rows, owners, rg, [&](int64_t o, int64_t r0, int64_t r1) {
    double* dw = ws + o * nw;
    double* db = ws + (owners + o) * nw;
    for (int64_t c = rg.lane; c < nw; c += 32) dw[c] = db[c] = 0;
    for (int64_t row = r0; row < r1; ++row) {
      const T* go = static_cast<const T*>(p.grad) + row * g.W;
      for (int64_t c0 = 0; c0 < g.D; c0 += g.L) {
        const int64_t base = row * g.D + c0, k = c0 / g.L;
        double mu, r;
        group_stats<T>(p, g, base, rg, smem, &mu, &r);
        // h = drop(dout_y)·u (the gradient reaching ln, times nothing else); g = h·w.
        auto h_of = [&](int64_t j) {
          const int64_t d = c0 + j;
          return drop(p, g, to_float(go[g.yoff + d]), row, g.yoff + d) * ldd<T>(p.u, base + j);
        };
        double sg = 0, sgn = 0, sh = 0, shn = 0;
        for (int64_t j = rg.lane; j < g.L; j += 32) {
          const int64_t wi = p.group_norm ? k : c0 + j;
          const double h = h_of(j), n = (ldd<T>(p.x, base + j) - mu) * r;
          // __dmul_rn: no FMA contraction, so the dx loop's g·w is the same rounded value and
          // g·w − mean(g·w) is exactly 0 where the group has one element.
          const double gw = __dmul_rn(h, ldd<T>(p.weight, wi));
          sg += gw;
          sgn += gw * n;
          if (p.group_norm) {
            sh += h;
            shn += h * n;
          } else {
            dw[c0 + j] += h * n;
            db[c0 + j] += h;
          }
        }
        const double mg = group_sum(sg, rg, smem) / static_cast<double>(g.L);
        const double mgn = group_sum(sgn, rg, smem) / static_cast<double>(g.L);
        if (p.group_norm) {
          const double tw = group_sum(shn, rg, smem), tb = group_sum(sh, rg, smem);
          if (rg.lane == k % 32) {
            dw[k] += tw;
            db[k] += tb;
          }
        }
        for (int64_t j = rg.lane; j < g.L; j += 32) {
          const int64_t d = c0 + j, wi = p.group_norm ? k : d;
          const double w = ldd<T>(p.weight, wi), n = (ldd<T>(p.x, base + j) - mu) * r;
          const double gy = drop(p, g, to_float(go[g.yoff + d]), row, g.yoff + d);
          const double gw = __dmul_rn(gy * ldd<T>(p.u, base + j), w);
          double dx = r * ((gw - mg) - n * mgn);
          double du = gy * (n * w + ldd<T>(p.bias, wi));
          if (p.concat_ux) {
            du += drop(p, g, to_float(go[d]), row, d);
            dx += drop(p, g, to_float(go[g.D + d]), row, g.D + d);
          }
          static_cast<T*>(p.out)[base + j] = from_float<T>(static_cast<float>(dx));
          static_cast<T*>(p.du)[base + j] = from_float<T>(static_cast<float>(du));
        }
      }
    }
  });
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  const training_dev::RowLaunch s = training_dev::row_launch_width(p.rows, 32, 0);
  return RECOPS_LAUNCH_KERNEL("norm_mul_dropout", (fwd_kernel<T>),
                              dim3(static_cast<unsigned>(s.blocks)), dim3(s.block), 0, ctx.stream,
                              p, s.owners);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  const int64_t nw = p.group_norm ? p.heads : p.D;
  const int64_t P = training::norm_partials(p.rows, nw);
  if (p.rows > 0) {
    const training_dev::RowLaunch s = training_dev::row_launch_width(p.rows, 32, P);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("norm_mul_dropout_bwd", (bwd_kernel<T>),
                                                dim3(static_cast<unsigned>(s.blocks)),
                                                dim3(s.block), 0, ctx.stream, p, s.owners));
  }
  const double* ws = static_cast<const double*>(p.workspace);
  void* outs[2] = {p.dweight, p.dbias};
  for (int j = 0; j < 2; ++j)
    RECOPS_RETURN_IF_ERROR(training_dev::launch_column_sum(
        "norm_mul_dropout_bwd", ws + j * P * nw, P, nw, static_cast<T*>(outs[j]), ctx.stream));
  return Status::Ok();
}

}  // namespace recops::ops::norm_mul_dropout_ns
