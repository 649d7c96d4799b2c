// training/layer_norm/cuda/kernel.cuh: the device code of layer_norm, swish_layer_norm and their
// backward ops on the family's row kit (common/cuda/row_norm.cuh), and the per-dtype launchers
// inst/ instantiates.
//
// A row group (packed several to a warp for short rows, row_launch_packed; a warp; or the CTA)
// owns whole rows; thread `lane` holds vectors lane, lane + width, ... of a row, the first kSlots
// in registers. Arithmetic in fp64 (README: x − mean and n·w + b cancel); loads and stores in T.
//   fwd: pass 1 (x cached) Σ x -> mean; pass 2 Σ (x − mean)² -> r; pass 3 y0 = n·w + b,
//        y = y0 or σ(y0)·x
//   bwd: pass 1 (x, dy cached) Σ x -> mean; pass 2 -> r; pass 3 Σ g and Σ g·n with h the gradient
//        reaching y0 and g = h·w; pass 4 dx = r·(g − mean g − n·mean(g·n)) (+ dy·σ(y0)),
//        dweight += h·n, dbias += h per owner (registers for the cached slots, else the owner's
//        fp64 workspace row, which only this thread touches at those columns); column_sum_kernel
//        adds the owners in a fixed order.
// Index math is 64-bit; rows are owned as contiguous ranges, so any row count is a loop.
#pragma once

#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/layer_norm/cuda/launch.h"

namespace recops::ops::layer_norm_ns {

using training_dev::for_owners;
using training_dev::for_slots;
using training_dev::load_vec;
using training_dev::packed_group_sum;
using training_dev::row_group;
using training_dev::RowCache;
using training_dev::RowGroup;
using training_dev::RowLaunch;
using training_dev::store_vec;
constexpr int kFwdSlots = training_dev::kRowSlots;
constexpr int kBwdSlots = 2;  // two cached rows (x, dy) and two fp64 column sums per slot

__device__ __forceinline__ double sigm(double v) {
  return 1.0 / (1.0 + exp(-v));
}

// kN elements of an optional [D] vector at column c (fill when absent).
template <class T, int kN>
__device__ __forceinline__ void column_vec(const void* t, int64_t c, float fill, float (&out)[kN]) {
  if (t == nullptr) {
#pragma unroll
    for (int j = 0; j < kN; ++j) out[j] = fill;
  } else {
    load_vec<T, kN>(static_cast<const T*>(t) + c, out);
  }
}

// mean and r of the row at xr (vectors cached in cx), the same bits in every thread of the group.
template <class T, int kN, int kSlots>
__device__ __forceinline__ void row_stats(const T* xr, int64_t nvec, int64_t D, double eps,
                                          const RowGroup& g, double* smem, RowCache<kN, kSlots>& cx,
                                          double* mu, double* r) {
  double sum = 0;
  for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
    float x[kN];
    cx.load(k, s, xr, x);
#pragma unroll
    for (int j = 0; j < kN; ++j) sum += x[j];
  });
  const double m = packed_group_sum(sum, g, smem) / static_cast<double>(D);
  double ss = 0;
  for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
    float x[kN];
    cx.get(k, s, xr, x);
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      const double c = x[j] - m;
      ss += c * c;
    }
  });
  *mu = m;
  *r = 1.0 / sqrt(packed_group_sum(ss, g, smem) / static_cast<double>(D) + eps);
}

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    fwd_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  for_owners(p.rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      RowCache<kN, kFwdSlots> cx;
      double mu, r;
      row_stats<T, kN, kFwdSlots>(xr, nvec, D, p.eps, g, smem, cx, &mu, &r);
      for_slots<kFwdSlots>(nvec, g, [&](int k, int64_t s) {
        float x[kN], w[kN], b[kN], y[kN];
        cx.get(k, s, xr, x);
        column_vec<T, kN>(p.weight, s * kN, 1.f, w);
        column_vec<T, kN>(p.bias, s * kN, 0.f, b);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          const double y0 = (x[j] - mu) * r * w[j] + b[j];
          y[j] = static_cast<float>(p.swish ? x[j] * sigm(y0) : y0);
        }
        store_vec<T, kN>(static_cast<T*>(p.out) + row * D + s * kN, y);
      });
    }
  });
}

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    bwd_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  double* ws = static_cast<double*>(p.workspace);
  for_owners(p.rows, owners, g, [&](int64_t o, int64_t r0, int64_t r1) {
    // This owner's rows of the [n, owners, D] workspace (nullptr: not wanted).
    double* dw_row = p.dweight ? ws + o * D : nullptr;
    double* db_row = p.dbias ? ws + ((p.dweight ? owners : 0) + o) * D : nullptr;
    double acc_w[kBwdSlots][kN], acc_b[kBwdSlots][kN];
#pragma unroll
    for (int k = 0; k < kBwdSlots; ++k)
#pragma unroll
      for (int j = 0; j < kN; ++j) acc_w[k][j] = acc_b[k][j] = 0;
    // The uncached workspace columns this thread adds to: zeroed first.
    if (dw_row || db_row)
      for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
        if (k < kBwdSlots) return;
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          if (dw_row) dw_row[s * kN + j] = 0;
          if (db_row) db_row[s * kN + j] = 0;
        }
      });
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      const T* gr = static_cast<const T*>(p.grad) + row * D;
      RowCache<kN, kBwdSlots> cx, cg;
      double mu, r;
      row_stats<T, kN, kBwdSlots>(xr, nvec, D, p.eps, g, smem, cx, &mu, &r);
      // h (the gradient reaching y0) and σ(y0) of vector s, n = (x − mean)·r.
      auto grads = [&](int k, int64_t s, float(&x)[kN], float(&dy)[kN], float(&w)[kN],
                       double(&n)[kN], double(&h)[kN], double(&sg)[kN], bool first) {
        cx.get(k, s, xr, x);
        if (first)
          cg.load(k, s, gr, dy);
        else
          cg.get(k, s, gr, dy);
        float b[kN];
        column_vec<T, kN>(p.weight, s * kN, 1.f, w);
        column_vec<T, kN>(p.bias, s * kN, 0.f, b);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          n[j] = (x[j] - mu) * r;
          if (p.swish) {
            sg[j] = sigm(n[j] * w[j] + b[j]);
            h[j] = dy[j] * static_cast<double>(x[j]) * sg[j] * (1.0 - sg[j]);
          } else {
            sg[j] = 0;
            h[j] = dy[j];
          }
        }
      };
      double sum_g = 0, sum_gn = 0;
      for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
        float x[kN], dy[kN], w[kN];
        double n[kN], h[kN], sg[kN];
        grads(k, s, x, dy, w, n, h, sg, true);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          sum_g += h[j] * w[j];
          sum_gn += h[j] * w[j] * n[j];
        }
      });
      const double mg = packed_group_sum(sum_g, g, smem) / static_cast<double>(D);
      const double mgn = packed_group_sum(sum_gn, g, smem) / static_cast<double>(D);
      for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
        float x[kN], dy[kN], w[kN], dx[kN];
        double n[kN], h[kN], sg[kN];
        grads(k, s, x, dy, w, n, h, sg, false);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          double v = r * (h[j] * w[j] - mg - n[j] * mgn);
          if (p.swish) v += dy[j] * sg[j];
          dx[j] = static_cast<float>(v);
          if (k < kBwdSlots) {
            acc_w[k][j] += h[j] * n[j];
            acc_b[k][j] += h[j];
          } else {
            if (dw_row) dw_row[s * kN + j] += h[j] * n[j];
            if (db_row) db_row[s * kN + j] += h[j];
          }
        }
        store_vec<T, kN>(static_cast<T*>(p.out) + row * D + s * kN, dx);
      });
    }
    for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
      if (k >= kBwdSlots) return;
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        if (dw_row) dw_row[s * kN + j] = acc_w[k][j];
        if (db_row) db_row[s * kN + j] = acc_b[k][j];
      }
    });
  });
}

// 16-byte vectors when D is a multiple of their width and every pointer is aligned.
template <class T>
bool vectorizable(const Params& p) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const void* ptrs[] = {p.x, p.out, p.weight, p.bias, p.grad};
  for (const void* q : ptrs)
    if (q != nullptr && !aligned(q)) return false;
  return p.D % (16 / sizeof(T)) == 0;
}

// One direction's kernel (so that each inst/ file compiles only its own), then for the backward
// the column sums.
template <class T, int kN, bool kBwd>
Status launch_n(const Params& p, const Context& ctx) {
  const int npart = (p.dweight ? 1 : 0) + (p.dbias ? 1 : 0);
  const int64_t P = kBwd && npart > 0 ? training::norm_partials(p.rows, p.D) : 0;
  const RowLaunch s =
      training_dev::row_launch_packed(p.rows, p.D / kN, P, training_dev::kRowPackedPerLane);
  const dim3 grid(static_cast<unsigned>(s.blocks)), block(s.block);
  if constexpr (!kBwd) {
    return RECOPS_LAUNCH_KERNEL("layer_norm", (fwd_kernel<T, kN>), grid, block, 0, ctx.stream, p,
                                s.width, s.owners);
  } else {
    if (p.rows > 0)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("layer_norm_bwd", (bwd_kernel<T, kN>), grid,
                                                  block, 0, ctx.stream, p, s.width, s.owners));
    const double* ws = static_cast<const double*>(p.workspace);
    void* outs[2] = {p.dweight ? p.dweight : p.dbias, p.dbias};
    for (int j = 0; j < npart; ++j)
      RECOPS_RETURN_IF_ERROR(training_dev::launch_column_sum(
          "layer_norm_bwd", ws + j * P * p.D, P, p.D, static_cast<T*>(outs[j]), ctx.stream));
    return Status::Ok();
  }
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_n<T, 16 / sizeof(T), false>(p, ctx)
                            : launch_n<T, 1, false>(p, ctx);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_n<T, 16 / sizeof(T), true>(p, ctx)
                            : launch_n<T, 1, true>(p, ctx);
}

}  // namespace recops::ops::layer_norm_ns
