// training/l2norm/cuda/kernel.cuh: the device code of l2norm and l2norm_bwd on the family's row
// kit (common/cuda/row_norm.cuh), and the per-dtype launchers that inst/ instantiates.
//
// One row per row group (row_launch_packed: a few lanes for short rows, several rows to a warp;
// a warp; or the CTA for long rows), the first kRowSlots vectors of each thread's part in
// registers.
//   fwd: pass 1 ss = Σ x² (fp32); r = 1 / sqrt(ss + eps); pass 2 y = x·r
//   bwd: pass 1 ss and s = Σ dy·x (x, dy cached); pass 2 dx = r·(dy − r²·s·x). It cancels where
//        dy is nearly parallel to y = x·r, so (as rms_norm_bwd) the sums are float pairs, r and
//        K = r²·s fp64 once per row, and dx fp32 with K split in two floats (sub_split_prod).
// Index math is 64-bit; rows are owned as contiguous ranges, so any row count is a loop.
#pragma once

#include <cstdint>

#include "core/cuda/launch.h"
#include "ops/training/common/cuda/row_norm.cuh"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/l2norm/cuda/launch.h"

namespace recops::ops::l2norm_ns {

using training_dev::for_owners;
using training_dev::for_slots;
using training_dev::packed_group_sum;
using training_dev::row_group;
using training_dev::RowCache;
using training_dev::RowGroup;
using training_dev::RowLaunch;
using training_dev::store_vec;
constexpr int kSlots = training_dev::kRowSlots;

template <class T, int kN>
__global__ void __launch_bounds__(training_dev::kRowMaxThreads)
    fwd_kernel(Params p, int width, int64_t owners) {
  __shared__ float smem[32];
  const RowGroup g = row_group(width);
  const int64_t D = p.D, nvec = D / kN;
  for_owners(p.rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      RowCache<kN, kSlots> cx;
      const float ss = packed_group_sum(cx.template load_sum_sq<float>(xr, nvec, g), g, smem);
      const float r = 1.f / sqrtf(ss + static_cast<float>(p.eps));
      T* yr = static_cast<T*>(p.out) + row * D;
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN];
        cx.get(k, s, xr, v);
#pragma unroll
        for (int j = 0; j < kN; ++j) v[j] *= r;
        store_vec<T, kN>(yr + s * kN, v);
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
  for_owners(p.rows, owners, g, [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const T* xr = static_cast<const T*>(p.x) + row * D;
      const T* gr = static_cast<const T*>(p.grad) + row * D;
      RowCache<kN, kSlots> cx, cg;
      training_dev::FloatPair ss, dot;  // this thread's Σ x² and Σ dy·x
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN], dy[kN];
        cx.load(k, s, xr, v);
        cg.load(k, s, gr, dy);
#pragma unroll
        for (int j = 0; j < kN; ++j) {
          ss.add_prod(v[j], v[j]);
          dot.add_prod(dy[j], v[j]);
        }
      });
      // Per-row scalars in fp64: r, and K = r²·s split into floats kh + kl.
      const double r = rsqrt(packed_group_sum(ss.value(), g, smem) + p.eps);
      float kh, kl;
      training_dev::split_double(r * r * packed_group_sum(dot.value(), g, smem), kh, kl);
      const float rf = static_cast<float>(r);
      T* dxr = static_cast<T*>(p.out) + row * D;
      for_slots<kSlots>(nvec, g, [&](int k, int64_t s) {
        float v[kN], dy[kN];
        cx.get(k, s, xr, v);
        cg.get(k, s, gr, dy);
#pragma unroll
        for (int j = 0; j < kN; ++j)
          v[j] = training_dev::sub_split_prod(dy[j], 1.f, kh, kl, v[j]) * rf;
        store_vec<T, kN>(dxr + s * kN, v);
      });
    }
  });
}

// 16-byte vectors when D is a multiple of their width and every row pointer is aligned.
template <class T>
bool vectorizable(const Params& p) {
  auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return p.D % (16 / sizeof(T)) == 0 && aligned(p.x) && aligned(p.out) &&
         (!p.backward || aligned(p.grad));
}

template <class T, int kN>
Status launch_n(const Params& p, const Context& ctx) {
  const RowLaunch s =
      training_dev::row_launch_packed(p.rows, p.D / kN, 0, training_dev::kRowPackedPerLane);
  const dim3 grid(static_cast<unsigned>(s.blocks)), block(s.block);
  if (p.backward)
    return RECOPS_LAUNCH_KERNEL("l2norm_bwd", (bwd_kernel<T, kN>), grid, block, 0, ctx.stream, p,
                                s.width, s.owners);
  return RECOPS_LAUNCH_KERNEL("l2norm", (fwd_kernel<T, kN>), grid, block, 0, ctx.stream, p, s.width,
                              s.owners);
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_n<T, 16 / sizeof(T)>(p, ctx) : launch_n<T, 1>(p, ctx);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  return vectorizable<T>(p) ? launch_n<T, 16 / sizeof(T)>(p, ctx) : launch_n<T, 1>(p, ctx);
}

}  // namespace recops::ops::l2norm_ns
