// training/clipped_swiglu/cuda/kernel.cuh: the device code (reads only the params). Each thread
// takes groups of N consecutive outputs of one row; N = 16 / sizeof(T) when the launch found the
// rows and pointers 16-byte aligned (every access is then one 16-byte load or store), else 1.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/clipped_swiglu/params.h"

namespace recops::ops::clipped_swiglu_ns {

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};

// Acc: double for fp64, float otherwise.
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ AccOf<T> ld(T v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return core::cuda::to_float(v);
}
template <class T>
__device__ __forceinline__ T st(AccOf<T> v) {
  if constexpr (std::is_same_v<T, double>)
    return v;
  else
    return core::cuda::from_float<T>(v);
}

// N elements at p (aligned to N elements) in one access.
template <class T, int N>
__device__ __forceinline__ void load_pack(const T* p, T* out) {
  const Pack<T, N> v = *reinterpret_cast<const Pack<T, N>*>(p);
#pragma unroll
  for (int j = 0; j < N; ++j) out[j] = v.v[j];
}
template <class T, int N>
__device__ __forceinline__ void store_pack(T* p, const T* in) {
  Pack<T, N> v;
#pragma unroll
  for (int j = 0; j < N; ++j) v.v[j] = in[j];
  *reinterpret_cast<Pack<T, N>*>(p) = v;
}

// Outputs i0 .. i0+N-1 of row r (forward: y; backward: their gate and linear positions of dx).
template <class T, int N>
__device__ __forceinline__ void group(const Params& p, int64_t r, int64_t i0) {
  using Acc = AccOf<T>;
  const int64_t I = p.I;
  const T* x = static_cast<const T*>(p.x) + r * 2 * I;
  T g[N], u[N];
  if (p.interleaved) {
    T both[2 * N];  // g0 u0 g1 u1 ...
#pragma unroll
    for (int k = 0; k < 2; ++k) load_pack<T, N>(x + 2 * i0 + k * N, both + k * N);
#pragma unroll
    for (int j = 0; j < N; ++j) g[j] = both[2 * j], u[j] = both[2 * j + 1];
  } else {
    load_pack<T, N>(x + i0, g);
    load_pack<T, N>(x + I + i0, u);
  }
  const Acc L = static_cast<Acc>(p.limit), a = static_cast<Acc>(p.alpha),
            b = static_cast<Acc>(p.linear_offset);
  T d[N];
  if (p.backward) load_pack<T, N>(static_cast<const T*>(p.dy) + r * I + i0, d);
  T o1[N], o2[N];  // forward: y; backward: dgate, dlinear
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const Acc gv = ld(g[j]), uv = ld(u[j]);
    // Comparisons, not fmin/fmax: a NaN passes through the clamps (torch.clamp).
    const Acc gc = gv > L ? L : gv;
    const Acc uc = uv > L ? L : (uv < -L ? -L : uv);
    const Acc s = Acc(1) / (Acc(1) + exp(-a * gc));
    if (!p.backward) {
      o1[j] = st<T>(gc * s * (uc + b));
    } else {
      const Acc dv = ld(d[j]);
      // d/dg [g σ(αg)] = σ (1 + αg(1 − σ)): the bracket cancels near SiLU's minimum (αg ≈ −1.28),
      // where fp32 keeps only its absolute error; there it is recomputed in fp64 (rare: a branch).
      const Acc t = Acc(1) + a * gc * (Acc(1) - s);
      Acc fac = s * t;
      if constexpr (!std::is_same_v<Acc, double>) {
        if (fabs(t) < Acc(0.0625)) {
          const double sd = 1.0 / (1.0 + exp(-double(a) * double(gc)));
          fac = Acc(sd * (1.0 + double(a) * double(gc) * (1.0 - sd)));
        }
      }
      const Acc dg = dv * (uc + b) * fac;
      const Acc du = dv * gc * s;
      o1[j] = st<T>(gv <= L ? dg : Acc(0));
      o2[j] = st<T>((uv >= -L && uv <= L) ? du : Acc(0));
    }
  }
  if (!p.backward) {
    store_pack<T, N>(static_cast<T*>(p.out) + r * I + i0, o1);
    return;
  }
  T* dx = static_cast<T*>(p.out) + r * 2 * I;
  if (p.interleaved) {
    T both[2 * N];
#pragma unroll
    for (int j = 0; j < N; ++j) both[2 * j] = o1[j], both[2 * j + 1] = o2[j];
#pragma unroll
    for (int k = 0; k < 2; ++k) store_pack<T, N>(dx + 2 * i0 + k * N, both + k * N);
  } else {
    store_pack<T, N>(dx + i0, o1);
    store_pack<T, N>(dx + I + i0, o2);
  }
}

// A grid-stride loop over the rows * (I / N) groups (the launch guarantees N divides I).
template <class T, int N>
__global__ void clipped_swiglu_kernel(Params p) {
  const int64_t per_row = p.I / N;
  const int64_t total = p.rows * per_row;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < total;
       q += stride) {
    const int64_t r = q / per_row;
    group<T, N>(p, r, (q - r * per_row) * N);
  }
}

}  // namespace recops::ops::clipped_swiglu_ns
