// training/rms_norm/cuda/kernel.cuh: the device code of the four ops on the family's row kit
// (common/cuda/row_norm.cuh), and the per-dtype launchers that inst/ instantiates.
//
// One row per row group (row_launch_packed: a few lanes for short rows, several rows to a warp;
// a warp; or the CTA for long rows); thread `lane` holds vectors
// lane, lane + width, ... of the row, the first kSlots in registers. fp32 statistics.
//   fwd: pass 1 ss = Σ x²; r = 1 / sqrt(ss / D + eps); pass 2 y = x·r·w~ (rstd: r only,
//   rstd_kernel: no cache) bwd: pass 1 ss and dot = Σ dy·w~·x (x, dy cached); pass 2 dx = r·(dy·w~
//   − r²·(dot/D)·x).
//        dx cancels where x and dy·w~ are nearly parallel (README), so the sums are float pairs
//        (error-free fma products, TwoSum), added across the group and turned into r and
//        K = r²·dot/D in fp64 once per row, and dx is fp32 fmas with K split into two floats;
//        dweight: owner o (a row range) sums dy·x·r per column into registers (cached slots) or
//        its own workspace row (the rest), writes workspace row o; column_sum_kernel adds the
//        rows in a fixed order. rstd_bwd: dx = −dr·r³·x / D.
// Index math is 64-bit; rows are owned as contiguous ranges, so any row count is a loop.
#pragma once

#include <algorithm>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/rms_norm/cuda/launch.h"

namespace recops::ops::rms_norm_ns {

using training_dev::FloatPair;
using training_dev::for_owners;
using training_dev::for_slots;
using training_dev::load_vec;
using training_dev::packed_group_sum;
using training_dev::row_group;
using training_dev::row_launch_packed;
using training_dev::RowCache;
using training_dev::RowGroup;
using training_dev::RowLaunch;
constexpr int kSlots = training_dev::kRowSlots;
using training_dev::store_vec;

// r and dr: [rows] of r_dtype.
__device__ __forceinline__ float load_r(const Params& p, int64_t i) {
  switch (p.r_dtype) {
    case DType::fp64: return static_cast<float>(static_cast<const double*>(p.grad)[i]);
    case DType::fp16: return __half2float(static_cast<const __half*>(p.grad)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p.grad)[i]);
    default: return static_cast<const float*>(p.grad)[i];
  }
}
__device__ __forceinline__ void store_r(const Params& p, int64_t i, float r) {
  switch (p.r_dtype) {
    case DType::fp64: static_cast<double*>(p.out)[i] = r; break;
    case DType::fp16: static_cast<__half*>(p.out)[i] = __float2half_rn(r); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(p.out)[i] = __float2bfloat16_rn(r); break;
    default: static_cast<float*>(p.out)[i] = r;
  }
}

// w~ for vector s: weight_offset + weight (1 without weight).
template <class T, int kN>
__device__ __forceinline__ void weight_vec(const Params& p, int64_t s, float (&w)[kN]) {
  if (p.weight == nullptr) {
#pragma unroll
    for (int j = 0; j < kN; ++j) w[j] = 1.f;
    return;
  }
  load_vec<T, kN>(static_cast<const T*>(p.weight) + s * kN, w);
  const float off = static_cast<float>(p.weight_offset);
#pragma unroll
  for (int j = 0; j < kN; ++j) w[j] += off;
}

__device__ __forceinline__ float rstd_of(float ss, const Params& p) {
  return 1.f / sqrtf(ss / static_cast<float>(p.D) + static_cast<float>(p.eps));
}

// rms_norm_rstd: r only, so nothing is cached and the loads go 4 at a time. fwd_kernel's
// uncached vectors come one per round trip (R1, D = 16384 bf16: 8 vectors a thread, the last 4
// serial). The sum runs over the same vectors in the same order, so r is the same.
template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    rstd_kernel(Params p, int width, int64_t owners) {
  __shared__ float smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  training_dev::for_owned_rows(p.rows, owners, g, [&](int64_t row) {
    const T* xr = static_cast<const T*>(p.x) + row * D;
    float ss = 0.f;
#pragma unroll 4
    for (int64_t s = g.lane; s < nvec; s += g.width) {
      float v[kN];
      load_vec<T, kN>(xr + s * kN, v);
#pragma unroll
      for (int j = 0; j < kN; ++j) ss += v[j] * v[j];
    }
    const float r = rstd_of(packed_group_sum(ss, g, smem), p);
    if (g.lane == 0) store_r(p, row, r);
  });
}

// At most 64 registers (4 CTAs of kRowMaxThreads): left alone ptxas took 71 for bf16 vectors,
// 7 instead of 8 resident 128-thread CTAs per SM at D = 4096.
template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads, 4)
    fwd_kernel(Params p, int width, int64_t owners) {
  __shared__ float smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  for_owners(p.rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      RowCache<kN, kSlots> cx;
      const float r =
          rstd_of(packed_group_sum(cx.template load_sum_sq<float>(xr, nvec, g), g, smem), p);
      T* yr = static_cast<T*>(p.out) + row * D;
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN], w[kN];
        cx.get(k, s, xr, v);
        weight_vec<T, kN>(p, s, w);
#pragma unroll
        for (int j = 0; j < kN; ++j) v[j] = v[j] * r * w[j];
        store_vec<T, kN>(yr + s * kN, v);
      });
    }
  });
}

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    bwd_kernel(Params p, int width, int64_t owners) {
  __shared__ double smem[32];
  __shared__ float fsmem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  const double inv_d = 1.0 / static_cast<double>(D);
  const T* x = static_cast<const T*>(p.x);
  const bool rstd = p.mode == Mode::rstd_bwd;
  const bool with_dw = !rstd && p.dweight != nullptr;
  float* ws = static_cast<float*>(p.workspace);
  for_owners(p.rows, owners, g, [&](int64_t o, int64_t r0, int64_t r1) {
    float acc[kSlots][kN];  // this owner's dweight partials of the cached slots
#pragma unroll
    for (int k = 0; k < kSlots; ++k)
#pragma unroll
      for (int j = 0; j < kN; ++j) acc[k][j] = 0.f;
    float* wrow = with_dw ? ws + o * D : nullptr;
    if (with_dw)  // the uncached columns accumulate in the owner's workspace row
      for (int64_t s = g.lane + static_cast<int64_t>(kSlots) * g.width; s < nvec; s += g.width)
#pragma unroll
        for (int j = 0; j < kN; ++j) wrow[s * kN + j] = 0.f;
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = x + row * D;
      T* dxr = static_cast<T*>(p.out) + row * D;
      RowCache<kN, kSlots> cx;
      if (rstd) {  // dx = −dr·r³·x / D: a product, no cancellation, fp32 as the forward
        const float r =
            rstd_of(packed_group_sum(cx.template load_sum_sq<float>(xr, nvec, g), g, fsmem), p);
        const float c = -load_r(p, row) * r * r * r / static_cast<float>(D);
        for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
          float v[kN];
          cx.get(k, s, xr, v);
#pragma unroll
          for (int j = 0; j < kN; ++j) v[j] = c * v[j];
          store_vec<T, kN>(dxr + s * kN, v);
        });
        continue;
      }
      const T* gr = static_cast<const T*>(p.grad) + row * D;
      RowCache<kN, kSlots> cg;
      FloatPair ss, dot;  // this thread's Σ x² and Σ dy·w~·x
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN], dy[kN], w[kN];
        cx.load(k, s, xr, v);
        cg.load(k, s, gr, dy);
        weight_vec<T, kN>(p, s, w);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          ss.add_prod(v[j], v[j]);
          dot.add_prod3(dy[j], w[j], v[j]);
        }
      });
      // Per-row scalars in fp64: r, and K = r²·c split into floats kh + kl.
      const double r = rsqrt(packed_group_sum(ss.value(), g, smem) * inv_d + p.eps);
      float kh, kl;
      training_dev::split_double(r * r * (packed_group_sum(dot.value(), g, smem) * inv_d), kh, kl);
      const float rf = static_cast<float>(r);
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN], dy[kN], w[kN], dx[kN];
        cx.get(k, s, xr, v);
        cg.get(k, s, gr, dy);
        weight_vec<T, kN>(p, s, w);
#pragma unroll
        for (int j = 0; j < kN; ++j)
          dx[j] = training_dev::sub_split_prod(dy[j], w[j], kh, kl, v[j]) * rf;
        store_vec<T, kN>(dxr + s * kN, dx);
        if (!with_dw) return;
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          if (k < kSlots)
            acc[k][j] += dy[j] * v[j] * rf;
          else
            wrow[s * kN + j] += dy[j] * v[j] * rf;
        }
      });
    }
    if (with_dw)
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        if (k < kSlots)
#pragma unroll
          for (int j = 0; j < kN; ++j) wrow[s * kN + j] = acc[k][j];
      });
  });
}

// 16-byte vectors when D is a multiple of their width and every row pointer is aligned.
template <class T>
bool vectorizable(const Params& p) {
  constexpr int kN = 16 / sizeof(T);
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  // r (rstd) and dr (rstd_bwd) are read or written one element per row.
  return p.D % kN == 0 && aligned(p.x) && (p.mode == Mode::rstd || aligned(p.out)) &&
         (p.grad == nullptr || p.mode == Mode::rstd_bwd || aligned(p.grad)) &&
         (p.weight == nullptr || aligned(p.weight));
}

template <class T, int kN>
Status launch_fwd_n(const Params& p, const Context& ctx) {
  const RowLaunch s = row_launch_packed(p.rows, p.D / kN, 0, training_dev::kRowPackedPerLane);
  if (p.mode == Mode::rstd)
    return RECOPS_LAUNCH_KERNEL("rms_norm_rstd", (rstd_kernel<T, kN>),
                                dim3(static_cast<unsigned>(s.blocks)), dim3(s.block), 0, ctx.stream,
                                p, s.width, s.owners);
  return RECOPS_LAUNCH_KERNEL("rms_norm", (fwd_kernel<T, kN>),
                              dim3(static_cast<unsigned>(s.blocks)), dim3(s.block), 0, ctx.stream,
                              p, s.width, s.owners);
}

template <class T, int kN>
Status launch_bwd_n(const Params& p, const Context& ctx) {
  const bool with_dw = p.mode == Mode::norm_bwd && p.dweight != nullptr;
  const int64_t P = with_dw ? training::norm_partials(p.rows, p.D) : 0;
  if (p.rows > 0) {
    const RowLaunch s = row_launch_packed(p.rows, p.D / kN, P, training_dev::kRowPackedPerLane);
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
        "rms_norm_bwd", (bwd_kernel<T, kN>), dim3(static_cast<unsigned>(s.blocks)), dim3(s.block),
        0, ctx.stream, p, s.width, s.owners));
  }
  if (!with_dw) return Status::Ok();
  return training_dev::launch_column_sum("rms_norm_bwd", static_cast<const float*>(p.workspace), P,
                                         p.D, static_cast<T*>(p.dweight), ctx.stream);
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_fwd_n<T, 16 / sizeof(T)>(p, ctx) : launch_fwd_n<T, 1>(p, ctx);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_bwd_n<T, 16 / sizeof(T)>(p, ctx) : launch_bwd_n<T, 1>(p, ctx);
}

}  // namespace recops::ops::rms_norm_ns
