// training/rms_norm_gated/cuda/kernel.cuh: the device code of rms_norm_gated and its backward on
// the family's row kit (common/cuda/row_norm.cuh), and the per-dtype launchers inst/ instantiates.
//
// A row group (packed several to a warp for short groups, row_launch_packed; a warp; or the CTA)
// owns whole rows and walks their normalisation groups of gs columns one after the other; thread
// `lane` holds vectors lane, lane + width, ... of a group, the first kSlots in registers.
// Arithmetic in fp64 (README: y0 = n·w + b and dv = r·(h·w − n·mean(h·w·n)) cancel, and fp32
// misses the single standard there), except the forward of the gate-after form for 16-bit
// dtypes (fwd_gate_after_fp32_kernel: fp32 with exact x·w and r split in two floats); loads and
// stores in T.
//   fwd: pass 1 (x, and z when the gate comes first, cached) v = x or x·a(z), ss = Σ v²;
//        r = 1 / sqrt(ss / gs + eps); pass 2 y0 = v·r·w + b, y = y0·a(z) or y0
//   bwd: pass 1 (x, z, dy cached) ss = Σ v², dot = Σ h·w·v with h = dy·a(z) or dy;
//        pass 2 n = v·r, dv = r·(h·w − n·r·dot / gs), dx and dz (README); dweight += h·n,
//        dbias += h per owner: registers for the cached slots when gs = D, else the owner's fp64
//        workspace rows, which only this thread touches at those columns; column_sum_kernel
//        adds the owners in a fixed order.
// Index math is 64-bit; rows are owned as contiguous ranges, so any row count is a loop.
#pragma once

#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/rms_norm_gated/cuda/launch.h"

namespace recops::ops::rms_norm_gated_ns {

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
constexpr int kBwdSlots = 2;  // three cached rows (x, z, dy) and two fp64 column sums per slot

template <class A>
__device__ __forceinline__ A sigm(A z) {
  return A(1) / (A(1) + exp(-z));
}
// a(z): σ(z) or z·σ(z); a'(z): σ(1 − σ) or σ(1 + z(1 − σ)).
template <class A>
__device__ __forceinline__ A gate_act(bool sigmoid, A z) {
  return sigmoid ? sigm(z) : z * sigm(z);
}
// a(z) and a'(z) from one σ (one exp; the same values as gate_act and a separate σ for a').
template <class A>
__device__ __forceinline__ void gate_act_grad(bool sigmoid, A z, A& a, A& ag) {
  const A s = sigm(z);
  a = sigmoid ? s : z * s;
  ag = sigmoid ? s * (A(1) - s) : s * (A(1) + z * (A(1) - s));
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

// Calls f(base, c0, xr, zr) for each normalisation group of this row group's owned rows, in
// order: base its first element's index, c0 its first column, xr and zr its x and z.
template <class T, class F>
__device__ __forceinline__ void for_groups(const Params& p, int64_t owners, const RowGroup& g,
                                           F&& f) {
  const int64_t D = p.D, gs = p.group;
  for_owners(p.rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t base = r0 * D; base < r1 * D; base += gs)
      f(base, base % D, static_cast<const T*>(p.x) + base, static_cast<const T*>(p.z) + base);
  });
}

// The forward of the gate-after form (norm_before_gate) for 16-bit T in fp32 arithmetic: x·w is
// exact in fp32 (two 16-bit significands), Σx² a float pair, r in fp64 once per group and split
// into floats rh + rl, so y0 = fma(x·w, rh, b) + x·w·rl keeps its relative accuracy where the
// bias cancels n·w; a(z) in fp32 only scales y0. x and z are both loaded in the first pass.
// Its own kernel, so that its registers are not those of the fp64 path.
template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    fwd_gate_after_fp32_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup g = row_group(width);
  const int64_t gs = p.group, nvec = gs / kN;
  const double inv_gs = 1.0 / static_cast<double>(gs);
  for_groups<T>(p, owners, g, [&](int64_t base, int64_t c0, const T* xr, const T* zr) {
    RowCache<kN, kFwdSlots> cx, cz;
    training_dev::FloatPair ss;
    for_slots<kFwdSlots>(nvec, g, [&](int k, int64_t s) {
      float x[kN], z[kN];
      cx.load(k, s, xr, x);
      cz.load(k, s, zr, z);
#pragma unroll
      for (int j = 0; j < kN; ++j) ss.add_prod(x[j], x[j]);
    });
    float rh, rl;
    training_dev::split_double(rsqrt(packed_group_sum(ss.value(), g, smem) * inv_gs + p.eps), rh,
                               rl);
    for_slots<kFwdSlots>(nvec, g, [&](int k, int64_t s) {
      float x[kN], z[kN], w[kN], b[kN], y[kN];
      cx.get(k, s, xr, x);
      cz.get(k, s, zr, z);
      column_vec<T, kN>(p.weight, c0 + s * kN, 1.f, w);
      column_vec<T, kN>(p.bias, c0 + s * kN, 0.f, b);
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        const float xw = __fmul_rn(x[j], w[j]);
        y[j] = fmaf(xw, rl, fmaf(xw, rh, b[j])) * gate_act(p.sigmoid, z[j]);
      }
      store_vec<T, kN>(static_cast<T*>(p.out) + base + s * kN, y);
    });
  });
}

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    fwd_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup g = row_group(width);
  const int64_t gs = p.group, nvec = gs / kN;
  const bool before = p.norm_before_gate;
  for_groups<T>(p, owners, g, [&](int64_t base, int64_t c0, const T* xr, const T* zr) {
    RowCache<kN, kFwdSlots> cx, cz;  // z only when the gate comes first
    double ss = 0;
    for_slots<kFwdSlots>(nvec, g, [&](int k, int64_t s) {
      float x[kN], z[kN];
      cx.load(k, s, xr, x);
      if (!before) cz.load(k, s, zr, z);
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        const double v = before ? x[j] : x[j] * gate_act(p.sigmoid, static_cast<double>(z[j]));
        ss += v * v;
      }
    });
    const double r = 1.0 / sqrt(packed_group_sum(ss, g, smem) / static_cast<double>(gs) + p.eps);
    for_slots<kFwdSlots>(nvec, g, [&](int k, int64_t s) {
      float x[kN], z[kN], w[kN], b[kN], y[kN];
      cx.get(k, s, xr, x);
      if (before)
        load_vec<T, kN>(zr + s * kN, z);
      else
        cz.get(k, s, zr, z);
      column_vec<T, kN>(p.weight, c0 + s * kN, 1.f, w);
      column_vec<T, kN>(p.bias, c0 + s * kN, 0.f, b);
#pragma unroll
      for (int j = 0; j < kN; ++j) {
        const double a = gate_act(p.sigmoid, static_cast<double>(z[j]));
        const double y0 = (before ? x[j] : x[j] * a) * r * w[j] + b[j];
        y[j] = static_cast<float>(before ? y0 * a : y0);
      }
      store_vec<T, kN>(static_cast<T*>(p.out) + base + s * kN, y);
    });
  });
}

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    bwd_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, gs = p.group, nvec = gs / kN;
  const bool one_group = gs == D;  // the columns of a cached slot are the same in every row
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
    // The workspace columns this thread adds to: zeroed first.
    for (int64_t c0 = 0; c0 < D && (dw_row || db_row); c0 += gs)
      for_slots<kBwdSlots>(nvec, g, [&](int, int64_t s) {
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          if (dw_row) dw_row[c0 + s * kN + j] = 0;
          if (db_row) db_row[c0 + s * kN + j] = 0;
        }
      });
    for (int64_t base = r0 * D; base < r1 * D; base += gs) {
      const int64_t c0 = base % D;
      const T* xr = static_cast<const T*>(p.x) + base;
      const T* zr = static_cast<const T*>(p.z) + base;
      const T* gr = static_cast<const T*>(p.grad) + base;
      RowCache<kN, kBwdSlots> cx, cz, cg;
      double ss = 0, dot = 0;
      for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
        float x[kN], z[kN], dy[kN], w[kN];
        cx.load(k, s, xr, x);
        cz.load(k, s, zr, z);
        cg.load(k, s, gr, dy);
        column_vec<T, kN>(p.weight, c0 + s * kN, 1.f, w);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          const double a = gate_act(p.sigmoid, static_cast<double>(z[j]));
          const double v = p.norm_before_gate ? x[j] : x[j] * a;
          const double h = p.norm_before_gate ? dy[j] * a : dy[j];
          ss += v * v;
          dot += h * w[j] * v;
        }
      });
      const double r = 1.0 / sqrt(packed_group_sum(ss, g, smem) / static_cast<double>(gs) + p.eps);
      const double c = r * packed_group_sum(dot, g, smem) / static_cast<double>(gs);
      for_slots<kBwdSlots>(nvec, g, [&](int k, int64_t s) {
        float x[kN], z[kN], dy[kN], w[kN], b[kN], dx[kN], dz[kN];
        cx.get(k, s, xr, x);
        cz.get(k, s, zr, z);
        cg.get(k, s, gr, dy);
        column_vec<T, kN>(p.weight, c0 + s * kN, 1.f, w);
        column_vec<T, kN>(p.bias, c0 + s * kN, 0.f, b);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          const double zj = z[j];
          double a, ag;
          gate_act_grad(p.sigmoid, zj, a, ag);
          const double n = (p.norm_before_gate ? x[j] : x[j] * a) * r;
          const double h = p.norm_before_gate ? dy[j] * a : dy[j];
          const double dv = r * (h * w[j] - n * c);
          if (p.norm_before_gate) {
            dx[j] = static_cast<float>(dv);
            dz[j] = static_cast<float>(dy[j] * (n * w[j] + b[j]) * ag);
          } else {
            dx[j] = static_cast<float>(dv * a);
            dz[j] = static_cast<float>(dv * x[j] * ag);
          }
          if (one_group && k < kBwdSlots) {
            acc_w[k][j] += h * n;
            acc_b[k][j] += h;
          } else {
            if (dw_row) dw_row[c0 + s * kN + j] += h * n;
            if (db_row) db_row[c0 + s * kN + j] += h;
          }
        }
        store_vec<T, kN>(static_cast<T*>(p.out) + base + s * kN, dx);
        store_vec<T, kN>(static_cast<T*>(p.dz) + base + s * kN, dz);
      });
    }
    if (one_group)
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

// 16-byte vectors when gs is a multiple of their width and every pointer is aligned.
template <class T>
bool vectorizable(const Params& p) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  const void* ptrs[] = {p.x, p.z, p.out, p.weight, p.bias, p.grad, p.dz};
  for (const void* q : ptrs)
    if (q != nullptr && !aligned(q)) return false;
  return p.group % (16 / sizeof(T)) == 0;
}

// One direction's kernel (so that each inst/ file compiles only its own), then for the backward
// the column sums.
template <class T, int kN, bool kBwd>
Status launch_n(const Params& p, const Context& ctx) {
  const int npart = (p.dweight ? 1 : 0) + (p.dbias ? 1 : 0);
  const int64_t P = npart > 0 ? training::norm_partials(p.rows, p.D) : 0;
  const RowLaunch s =
      training_dev::row_launch_packed(p.rows, p.group / kN, P, training_dev::kRowPackedPerLane);
  const dim3 grid(static_cast<unsigned>(s.blocks)), block(s.block);
  if constexpr (!kBwd) {
    if constexpr (sizeof(T) == 2) {
      if (p.norm_before_gate)
        return RECOPS_LAUNCH_KERNEL("rms_norm_gated", (fwd_gate_after_fp32_kernel<T, kN>), grid,
                                    block, 0, ctx.stream, p, s.width, s.owners);
    }
    return RECOPS_LAUNCH_KERNEL("rms_norm_gated", (fwd_kernel<T, kN>), grid, block, 0, ctx.stream,
                                p, s.width, s.owners);
  } else {
    if (p.rows > 0)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("rms_norm_gated_bwd", (bwd_kernel<T, kN>), grid,
                                                  block, 0, ctx.stream, p, s.width, s.owners));
    const double* ws = static_cast<const double*>(p.workspace);
    void* outs[2] = {p.dweight ? p.dweight : p.dbias, p.dbias};
    for (int j = 0; j < npart; ++j)
      RECOPS_RETURN_IF_ERROR(training_dev::launch_column_sum(
          "rms_norm_gated_bwd", ws + j * P * p.D, P, p.D, static_cast<T*>(outs[j]), ctx.stream));
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

}  // namespace recops::ops::rms_norm_gated_ns
