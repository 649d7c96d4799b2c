// training/inplace_rope/cuda/kernel.cuh: the device code (reads only the params).
//
// rope_kernel: one work item = P consecutive pairs of the rope slice (a "group") of up to
// kHeadsPerThread heads of one position (b, l). The group's P cos and P sin values are loaded
// once and reused for those heads; the x groups of all the heads are loaded before any is
// rotated and stored (loads in flight together). Items are numbered group fastest, so a warp's
// threads touch consecutive groups of one row. With kVec the launch has checked that every group
// of x, dst, cos and sin is aligned for one access (x: 2P elements = 16 bytes); otherwise P = 1
// and every element is a separate access.
//
// bwd_rows_kernel (backward, aligned layouts): dx row by row in one pass, the nope channels
// copied and the rope slice rotated, 16 bytes an access.
// nope_copy_kernel (backward, other layouts): dx's channels [0, Dh - R) = dy's, N elements an
// access; rope_kernel then writes dx's rope slice.
//
// Arithmetic: Acc = double for fp64 x, float otherwise. Each output is a·b ∓ c·d, evaluated with
// Kahan's difference of products (the error of the product c·d recovered by an FMA, the other
// product fused): a near-cancelling pair keeps a relative error of ~1.5 ulp of Acc, which the
// `single` standard's max(rel) needs (a plain fp32 a·b − c·d keeps only the absolute error).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/inplace_rope/cuda/tiles.h"
#include "ops/training/inplace_rope/params.h"

namespace recops::ops::inplace_rope_ns {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Widening of an x or cos/sin value to Acc (exact for every pair of types used here).
template <class Acc, class V>
__device__ __forceinline__ Acc ld(V v) {
  if constexpr (std::is_same_v<V, double> || std::is_same_v<V, float>)
    return static_cast<Acc>(v);
  else
    return static_cast<Acc>(core::cuda::to_float(v));
}
template <class T, class Acc>
__device__ __forceinline__ T st(Acc v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return core::cuda::from_float<T>(v);
}

__device__ __forceinline__ unsigned short bits16(__half v) {
  return __half_as_ushort(v);
}
__device__ __forceinline__ unsigned short bits16(__nv_bfloat16 v) {
  return __bfloat16_as_ushort(v);
}

// N elements at p in one access when Vec (p aligned to N elements), else one by one.
template <class T, int N, bool Vec>
__device__ __forceinline__ void load_n(const T* p, T* out) {
  if constexpr (Vec) {
    const Pack<T, N> v = *reinterpret_cast<const Pack<T, N>*>(p);
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = v.v[j];
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) out[j] = p[j];
  }
}
template <class T, int N, bool Vec>
__device__ __forceinline__ void store_n(T* p, const T* in) {
  if constexpr (Vec && sizeof(T) * N == 16) {
    // 16 bytes as one uint4 (double2) built from the values' bits, stored with __stwb (the
    // default write-back policy): a plain Pack, memcpy or uint4 assignment was split into 2- or
    // 4-byte stores (seen in the PTX).
    if constexpr (std::is_same_v<T, double>) {
      __stwb(reinterpret_cast<double2*>(p), make_double2(in[0], in[1]));
    } else {
      uint32_t w[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        if constexpr (std::is_same_v<T, float>)
          w[k] = __float_as_uint(in[k]);
        else
          w[k] = static_cast<uint32_t>(bits16(in[2 * k])) |
                 (static_cast<uint32_t>(bits16(in[2 * k + 1])) << 16);
      }
      __stwb(reinterpret_cast<uint4*>(p), make_uint4(w[0], w[1], w[2], w[3]));
    }
  } else if constexpr (Vec) {
    Pack<T, N> v;
#pragma unroll
    for (int j = 0; j < N; ++j) v.v[j] = in[j];
    *reinterpret_cast<Pack<T, N>*>(p) = v;
  } else {
#pragma unroll
    for (int j = 0; j < N; ++j) p[j] = in[j];
  }
}

// a·b − c·d with one rounding of the exact products' difference up to ~1.5 ulp (Kahan). When c·d
// is not finite the correction is NaN; then the plain fused form (IEEE's Inf/NaN propagation,
// as the torch formula) is returned.
template <class Acc>
__device__ __forceinline__ Acc diff_of_products(Acc a, Acc b, Acc c, Acc d) {
  const Acc w = c * d;
  const Acc e = fma(-c, d, w);  // w − c·d exactly
  const Acc f = fma(a, b, -w);
  return isfinite(e) ? f + e : f;
}

// The forward (and the rope slice of the backward, p.sign already flipped by the entry).
template <class T, class C, int P, bool Vec>
__global__ void __launch_bounds__(kThreads) rope_kernel(Params p) {
  using Acc = AccOf<T>;
  const int64_t groups = p.half / P;  // the launch guarantees P divides half
  const int64_t hchunks = (p.H + kHeadsPerThread - 1) / kHeadsPerThread;
  const int64_t total = p.B * p.L * hchunks * groups;
  const int64_t first = p.Dh - 2 * p.half;
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const C* cs = static_cast<const C*>(p.cos);
  const C* sn = static_cast<const C*>(p.sin);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < total;
       q += stride) {
    const int64_t g = q % groups;
    const int64_t rest = q / groups;
    const int64_t hc = rest % hchunks;
    const int64_t bl = rest / hchunks;
    const int64_t l = bl % p.L, b = bl / p.L;
    const int64_t i0 = g * P;  // first pair of the group
    C cr[P], sr[P];
    load_n<C, P, Vec>(cs + b * p.cs_sb + l * p.cs_sl + i0, cr);
    load_n<C, P, Vec>(sn + b * p.sn_sb + l * p.sn_sl + i0, sr);
    Acc c[P], s[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
      c[j] = ld<Acc>(cr[j]);
      s[j] = p.sign > 0 ? ld<Acc>(sr[j]) : -ld<Acc>(sr[j]);
    }
    const int64_t h0 = hc * kHeadsPerThread;
    const int nh = static_cast<int>(p.H - h0 < kHeadsPerThread ? p.H - h0 : kHeadsPerThread);
    const int64_t off = first + 2 * i0;
    T xv[kHeadsPerThread][2 * P];
#pragma unroll
    for (int k = 0; k < kHeadsPerThread; ++k)
      if (k < nh)
        load_n<T, 2 * P, Vec>(src + b * p.src_sb + l * p.src_sl + (h0 + k) * p.src_sh + off, xv[k]);
#pragma unroll
    for (int k = 0; k < kHeadsPerThread; ++k) {
      if (k < nh) {
        T yv[2 * P];
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const Acc x0 = ld<Acc>(xv[k][2 * j]), x1 = ld<Acc>(xv[k][2 * j + 1]);
          // x0·c − x1·s and x1·c + x0·s = x1·c − (−x0)·s
          yv[2 * j] = st<T>(diff_of_products(x0, c[j], x1, s[j]));
          yv[2 * j + 1] = st<T>(diff_of_products(x1, c[j], -x0, s[j]));
        }
        store_n<T, 2 * P, Vec>(dst + b * p.dst_sb + l * p.dst_sl + (h0 + k) * p.dst_sh + off, yv);
      }
    }
  }
}

// The backward's nope channels: dst[row, 0:first] = src[row, 0:first], N elements at a time
// (the launch guarantees N divides first and, for N > 1, the alignment of every row start).
template <class T, int N>
__global__ void __launch_bounds__(kThreads) nope_copy_kernel(Params p) {
  const int64_t first = p.Dh - 2 * p.half;
  const int64_t per_row = first / N;
  const int64_t total = p.B * p.L * p.H * per_row;
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < total;
       q += stride) {
    const int64_t r = q / per_row;
    const int64_t c = (q - r * per_row) * N;
    const int64_t h = r % p.H, bl = r / p.H;
    const int64_t l = bl % p.L, b = bl / p.L;
    T v[N];
    load_n<T, N, (N > 1)>(src + b * p.src_sb + l * p.src_sl + h * p.src_sh + c, v);
    store_n<T, N, (N > 1)>(dst + b * p.dst_sb + l * p.dst_sl + h * p.dst_sh + c, v);
  }
}

// The backward in one pass over dx's rows, used when every access is aligned (the launch checks
// what the forward's vector path needs, and N | Dh − R): a group of G lanes (G = 2^log2g <= 32,
// at least the vectors of a row when a row has fewer than 32) takes one row (b, l, h) and walks
// its N-element vectors v = lane, lane + G, ...: a vector of the nope channels is copied, one of
// the rope slice rotated (its P = N / 2 pairs with their cos and sin). A row's (b, l, h) is
// worked out once per group, not once per vector (64-bit divisions per 16 bytes made the
// two-kernel path below 1 TB/s), and dx is written by whole rows.
template <class T, class C, int N>
__global__ void __launch_bounds__(kThreads) bwd_rows_kernel(Params p, int log2g) {
  using Acc = AccOf<T>;
  constexpr int P = N / 2;
  const int g_size = 1 << log2g;
  const int lane = static_cast<int>(threadIdx.x) & (g_size - 1);
  const int64_t groups_per_block = static_cast<int64_t>(blockDim.x) >> log2g;
  const int64_t rows = p.B * p.L * p.H;
  const int64_t row_v = p.Dh / N;
  const int64_t first_v = (p.Dh - 2 * p.half) / N;  // vectors of the nope channels
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  const C* cs = static_cast<const C*>(p.cos);
  const C* sn = static_cast<const C*>(p.sin);
  const int64_t step = static_cast<int64_t>(gridDim.x) * groups_per_block;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * groups_per_block + (threadIdx.x >> log2g);
       r < rows; r += step) {
    const int64_t h = r % p.H, bl = r / p.H;
    const int64_t l = bl % p.L, b = bl / p.L;
    const T* srow = src + b * p.src_sb + l * p.src_sl + h * p.src_sh;
    T* drow = dst + b * p.dst_sb + l * p.dst_sl + h * p.dst_sh;
    for (int64_t v = lane; v < row_v; v += g_size) {
      T xv[N];
      load_n<T, N, true>(srow + v * N, xv);
      if (v >= first_v) {
        const int64_t i0 = (v - first_v) * P;  // first pair of the vector
        C cr[P], sr[P];
        load_n<C, P, true>(cs + b * p.cs_sb + l * p.cs_sl + i0, cr);
        load_n<C, P, true>(sn + b * p.sn_sb + l * p.sn_sl + i0, sr);
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const Acc c = ld<Acc>(cr[j]);
          const Acc s = p.sign > 0 ? ld<Acc>(sr[j]) : -ld<Acc>(sr[j]);
          const Acc x0 = ld<Acc>(xv[2 * j]), x1 = ld<Acc>(xv[2 * j + 1]);
          xv[2 * j] = st<T>(diff_of_products(x0, c, x1, s));
          xv[2 * j + 1] = st<T>(diff_of_products(x1, c, -x0, s));
        }
      }
      store_n<T, N, true>(drow + v * N, xv);
    }
  }
}

}  // namespace recops::ops::inplace_rope_ns
