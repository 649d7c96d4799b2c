// jagged/multi_head_jagged_flash_attention/cuda/kernel.cuh: the cuda_sm80 kernels (plain FMA, fp32
// accumulation; compiled for sm_80 and sm_90a) and their launchers. A block owns (h, b, tile of
// kWarps rows); each warp owns one row with D spread over the lanes (NPL = D bucket / 32 elements
// per lane, d = lane + 32 i), and the other operand streams through shared memory kKeys rows at a
// time. Every dot product is a fixed xor-shuffle tree, so results are bit-identical across runs.
// Blocks also zero their share of the truncated rows m >= n_b (lse -inf), so every output element
// is written. Index math is 64-bit.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>

#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/launch.h"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/seq.cuh"
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/tiles.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {
namespace dev {

using core::cuda::from_float;
using core::cuda::to_float;

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int s = 16; s > 0; s >>= 1) x += __shfl_xor_sync(0xffffffffu, x, s);
  return x;
}

// The lane's NPL elements of row r of head h (0 past D).
template <class T, int NPL>
__device__ __forceinline__ void load_row(const HeadRows& t, int64_t h, int64_t r, int64_t D,
                                         int lane, float (&x)[NPL]) {
  const T* src = static_cast<const T*>(t.data) + h * t.hs + r * t.rs;
#pragma unroll
  for (int i = 0; i < NPL; ++i) {
    const int64_t d = lane + 32 * i;
    x[i] = d < D ? to_float(src[d]) : 0.f;
  }
}

template <class T, int NPL>
__device__ __forceinline__ void store_row(void* base, int64_t at, int64_t D, int lane,
                                          const float (&x)[NPL], float f) {
  T* dst = static_cast<T*>(base) + at;
#pragma unroll
  for (int i = 0; i < NPL; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < D) dst[d] = from_float<T>(x[i] * f);
  }
}

// Stages rows [r0, r0 + cnt) of head h of `a` (and `b`) into shared tiles [kKeys][NPL * 32]
// (zeros past cnt and past D). All threads of the block take part.
template <class T, int NPL>
__device__ __forceinline__ void stage(const HeadRows& a, const HeadRows& b, int64_t h, int64_t r0,
                                      int64_t cnt, int64_t D, T (*sa)[NPL * 32],
                                      T (*sb)[NPL * 32]) {
  constexpr int W = NPL * 32;
  for (int i = threadIdx.x; i < kKeys * W; i += blockDim.x) {
    const int j = i / W, d = i % W;
    const bool ok = j < cnt && d < D;
    const int64_t r = r0 + j;
    sa[j][d] = ok ? static_cast<const T*>(a.data)[h * a.hs + r * a.rs + d] : from_float<T>(0.f);
    sb[j][d] = ok ? static_cast<const T*>(b.data)[h * b.hs + r * b.rs + d] : from_float<T>(0.f);
  }
}

template <class T, int NPL>
__device__ __forceinline__ float dot_tile(const float (&x)[NPL], const T* row, int lane) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < NPL; ++i) s = fmaf(x[i], to_float(row[lane + 32 * i]), s);
  return s;
}

// Decodes block index bid into (h, b, tile).
struct Work {
  int64_t h, b, tile;
};
__device__ __forceinline__ Work work_of(const Params& p, int64_t bid, int64_t ntiles) {
  const int64_t tile = bid % ntiles, hb = bid / ntiles;
  return {hb / p.B, hb % p.B, tile};
}

// Zeroes this block's share of rows [n, len) of `outs` (and sets lse to -inf when given).
template <class T>
__device__ void zero_tail(const Params& p, const Work& w, const Seq& s, int64_t ntiles, void* o0,
                          void* o1, void* o2, float* lse) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t m = s.n + w.tile * kWarps + warp; m < s.len; m += ntiles * kWarps) {
    const int64_t at = (w.h * p.total_L + s.o + m) * p.D;
    for (int64_t d = lane; d < p.D; d += 32) {
      static_cast<T*>(o0)[at + d] = from_float<T>(0.f);
      if (o1) static_cast<T*>(o1)[at + d] = from_float<T>(0.f);
      if (o2) static_cast<T*>(o2)[at + d] = from_float<T>(0.f);
    }
    if (lse && lane == 0) lse[w.h * p.total_L + s.o + m] = -INFINITY;
  }
}

// Forward: out(m) = Σ_n softmax(s[m, :])[n] v(n) / max_L with an online softmax over key tiles.
template <class T, int NPL>
__global__ void __launch_bounds__(kWarps * 32)
    fwd_kernel(Params p, int64_t ntiles, int64_t nblocks) {
  __shared__ T ks[kKeys][NPL * 32];
  __shared__ T vs[kKeys][NPL * 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int64_t bid = blockIdx.x; bid < nblocks; bid += gridDim.x) {
    const Work w = work_of(p, bid, ntiles);
    const Seq s = seq_of(p, w.b);
    zero_tail<T>(p, w, s, ntiles, p.out, nullptr, nullptr, p.lse);
    const int64_t row0 = w.tile * kWarps;
    if (row0 >= s.n) continue;  // uniform over the block
    const int64_t m = row0 + warp;
    const bool active = m < s.n;
    float q[NPL], acc[NPL];
    if (active) load_row<T, NPL>(p.q, w.h, s.o + m, p.D, lane, q);
#pragma unroll
    for (int i = 0; i < NPL; ++i) acc[i] = 0.f;
    float mx = -INFINITY, sum = 0.f;
    for (int64_t c = 0; c < s.n; c += kKeys) {
      const int64_t cnt = min(static_cast<int64_t>(kKeys), s.n - c);
      __syncthreads();
      stage<T, NPL>(p.k, p.v, w.h, s.o + c, cnt, p.D, ks, vs);
      __syncthreads();
      if (!active) continue;
      float sc[kKeys];
      float cmax = mx;
#pragma unroll
      for (int j = 0; j < kKeys; ++j) {
        sc[j] = warp_sum(dot_tile<T, NPL>(q, ks[j], lane));
        if (j < cnt) cmax = fmaxf(cmax, sc[j]);
      }
      const float corr = expf(mx - cmax);  // 0 on the first tile (mx = -inf)
      sum *= corr;
#pragma unroll
      for (int i = 0; i < NPL; ++i) acc[i] *= corr;
#pragma unroll
      for (int j = 0; j < kKeys; ++j) {
        if (j >= cnt) break;
        const float e = expf(sc[j] - cmax);
        sum += e;
#pragma unroll
        for (int i = 0; i < NPL; ++i) acc[i] = fmaf(e, to_float(vs[j][lane + 32 * i]), acc[i]);
      }
      mx = cmax;
    }
    if (active) {
      const int64_t r = s.o + m;
      store_row<T, NPL>(p.out, (w.h * p.total_L + r) * p.D, p.D, lane, acc,
                        1.f / (sum * static_cast<float>(p.max_L)));
      if (p.lse && lane == 0) p.lse[w.h * p.total_L + r] = mx + logf(sum);
    }
  }
}

// Backward, per query row m: Δ = max_L · out(m)·g(m); dq(m) = Σ_n p (g(m)·v(n) − Δ) k(n).
template <class T, int NPL>
__global__ void __launch_bounds__(kWarps * 32)
    dq_kernel(Params p, int64_t ntiles, int64_t nblocks) {
  __shared__ T ks[kKeys][NPL * 32];
  __shared__ T vs[kKeys][NPL * 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float maxl = static_cast<float>(p.max_L), inv_maxl = 1.f / maxl;
  for (int64_t bid = blockIdx.x; bid < nblocks; bid += gridDim.x) {
    const Work w = work_of(p, bid, ntiles);
    const Seq s = seq_of(p, w.b);
    zero_tail<T>(p, w, s, ntiles, p.dq, p.dk, p.dv, nullptr);
    const int64_t row0 = w.tile * kWarps;
    if (row0 >= s.n) continue;
    const int64_t m = row0 + warp;
    const bool active = m < s.n;
    float q[NPL], g[NPL], acc[NPL];
    float delta = 0.f, lse = 0.f;
    if (active) {
      float o[NPL];
      load_row<T, NPL>(p.q, w.h, s.o + m, p.D, lane, q);
      load_row<T, NPL>(p.grad, w.h, s.o + m, p.D, lane, g);
      load_row<T, NPL>(p.o, w.h, s.o + m, p.D, lane, o);
      float part = 0.f;
#pragma unroll
      for (int i = 0; i < NPL; ++i) part = fmaf(o[i], g[i], part);
      delta = maxl * warp_sum(part);
      lse = p.lse_in[w.h * p.lse_hs + s.o + m];
    }
#pragma unroll
    for (int i = 0; i < NPL; ++i) acc[i] = 0.f;
    for (int64_t c = 0; c < s.n; c += kKeys) {
      const int64_t cnt = min(static_cast<int64_t>(kKeys), s.n - c);
      __syncthreads();
      stage<T, NPL>(p.k, p.v, w.h, s.o + c, cnt, p.D, ks, vs);
      __syncthreads();
      if (!active) continue;
#pragma unroll
      for (int j = 0; j < kKeys; ++j) {
        if (j >= cnt) break;
        const float sc = warp_sum(dot_tile<T, NPL>(q, ks[j], lane));
        const float dp = warp_sum(dot_tile<T, NPL>(g, vs[j], lane));
        const float pr = expf(sc - lse) * inv_maxl;
        const float ds = pr * (dp - delta);
#pragma unroll
        for (int i = 0; i < NPL; ++i) acc[i] = fmaf(ds, to_float(ks[j][lane + 32 * i]), acc[i]);
      }
    }
    if (active) store_row<T, NPL>(p.dq, (w.h * p.total_L + s.o + m) * p.D, p.D, lane, acc, 1.f);
  }
}

// Backward, per key row n: dv(n) = Σ_m p g(m), dk(n) = Σ_m p (g(m)·v(n) − Δ(m)) q(m); the query
// tiles' Δ (from out and g) and lse are staged with them.
template <class T, int NPL>
__global__ void __launch_bounds__(kWarps * 32)
    dkdv_kernel(Params p, int64_t ntiles, int64_t nblocks) {
  __shared__ T qs[kKeys][NPL * 32];
  __shared__ T gs[kKeys][NPL * 32];
  __shared__ float deltas[kKeys], lses[kKeys];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float maxl = static_cast<float>(p.max_L), inv_maxl = 1.f / maxl;
  for (int64_t bid = blockIdx.x; bid < nblocks; bid += gridDim.x) {
    const Work w = work_of(p, bid, ntiles);
    const Seq s = seq_of(p, w.b);
    const int64_t row0 = w.tile * kWarps;
    if (row0 >= s.n) continue;  // the tails were zeroed by dq_kernel
    const int64_t n = row0 + warp;
    const bool active = n < s.n;
    float k[NPL], v[NPL], dk[NPL], dv[NPL];
    if (active) {
      load_row<T, NPL>(p.k, w.h, s.o + n, p.D, lane, k);
      load_row<T, NPL>(p.v, w.h, s.o + n, p.D, lane, v);
    }
#pragma unroll
    for (int i = 0; i < NPL; ++i) dk[i] = dv[i] = 0.f;
    for (int64_t c = 0; c < s.n; c += kKeys) {
      const int64_t cnt = min(static_cast<int64_t>(kKeys), s.n - c);
      __syncthreads();
      stage<T, NPL>(p.q, p.grad, w.h, s.o + c, cnt, p.D, qs, gs);
      for (int j = warp; j < kKeys; j += kWarps) {  // Δ and lse of the tile's queries
        float dl = 0.f, l = 0.f;
        if (j < cnt) {
          float o[NPL], g[NPL];
          load_row<T, NPL>(p.o, w.h, s.o + c + j, p.D, lane, o);
          load_row<T, NPL>(p.grad, w.h, s.o + c + j, p.D, lane, g);
          float part = 0.f;
#pragma unroll
          for (int i = 0; i < NPL; ++i) part = fmaf(o[i], g[i], part);
          dl = maxl * warp_sum(part);
          l = p.lse_in[w.h * p.lse_hs + s.o + c + j];
        }
        if (lane == 0) {
          deltas[j] = dl;
          lses[j] = l;
        }
      }
      __syncthreads();
      if (!active) continue;
#pragma unroll
      for (int j = 0; j < kKeys; ++j) {
        if (j >= cnt) break;
        const float sc = warp_sum(dot_tile<T, NPL>(k, qs[j], lane));
        const float dp = warp_sum(dot_tile<T, NPL>(v, gs[j], lane));
        const float pr = expf(sc - lses[j]) * inv_maxl;
        const float ds = pr * (dp - deltas[j]);
#pragma unroll
        for (int i = 0; i < NPL; ++i) {
          dv[i] = fmaf(pr, to_float(gs[j][lane + 32 * i]), dv[i]);
          dk[i] = fmaf(ds, to_float(qs[j][lane + 32 * i]), dk[i]);
        }
      }
    }
    if (active) {
      const int64_t at = (w.h * p.total_L + s.o + n) * p.D;
      store_row<T, NPL>(p.dk, at, p.D, lane, dk, 1.f);
      store_row<T, NPL>(p.dv, at, p.D, lane, dv, 1.f);
    }
  }
}

}  // namespace dev

// Blocks: (h, b, tile of kWarps rows) for every head and sequence, max(1, ceil(min(max_L,
// total_L) / kWarps)) tiles each (n_b <= both; at least one tile, so that the truncated rows of
// max_L = 0 are zeroed too).
struct Grid {
  int64_t ntiles, nblocks;
  dim3 grid;
};
inline Grid grid_of(const Params& p) {
  Grid g;
  g.ntiles = std::max<int64_t>(1, (std::min(p.max_L, p.total_L) + kWarps - 1) / kWarps);
  g.nblocks = p.H * p.B * g.ntiles;
  g.grid = dim3(static_cast<unsigned>(std::min<int64_t>(g.nblocks, kMaxGrid)));
  return g;
}

// The D bucket: NPL elements per lane, D <= 32 NPL (the entry's list refuses D > kMaxD).
template <class F>
Status by_bucket(int64_t D, F&& f) {
  if (D <= 64) return f(std::integral_constant<int, 2>{});
  if (D <= 128) return f(std::integral_constant<int, 4>{});
  return f(std::integral_constant<int, 8>{});
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  const Grid g = grid_of(p);
  if (g.nblocks == 0) return Status::Ok();
  return by_bucket(p.D, [&](auto npl) {
    return RECOPS_LAUNCH_KERNEL("multi_head_jagged_flash_attention",
                                (dev::fwd_kernel<T, decltype(npl)::value>), g.grid,
                                dim3(kWarps * 32), 0, ctx.stream, p, g.ntiles, g.nblocks);
  });
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  const Grid g = grid_of(p);
  if (g.nblocks == 0) return Status::Ok();
  return by_bucket(p.D, [&](auto npl) {
    constexpr int NPL = decltype(npl)::value;
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL("multi_head_jagged_flash_attention_bwd",
                                                (dev::dq_kernel<T, NPL>), g.grid, dim3(kWarps * 32),
                                                0, ctx.stream, p, g.ntiles, g.nblocks));
    return RECOPS_LAUNCH_KERNEL("multi_head_jagged_flash_attention_bwd", (dev::dkdv_kernel<T, NPL>),
                                g.grid, dim3(kWarps * 32), 0, ctx.stream, p, g.ntiles, g.nblocks);
  });
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
