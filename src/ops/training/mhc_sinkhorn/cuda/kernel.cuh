// training/mhc_sinkhorn/cuda/kernel.cuh: the device code (reads only the params). One thread runs
// one token's n x n matrix through every step, in the CPU path's order of operations (cpu/), so
// the arithmetic is the same: T for T (fp32 for fp32, fp64 for fp64; README, Math).
//
// D > 0: n = D at compile time; every loop over the matrix unrolls and the matrix and the
// gradient live in registers. D = 0: n = p.n at run time, the matrices in memory the launch gives
// (the output in global memory for the forward, dynamic shared memory for the backward).
//
// Backward (the logits only are saved; the iterates are recomputed): the 2·iters − 1 steps are
// cut into at most `cap` segments of L steps; one forward sweep keeps each segment's input (the
// checkpoints); then, last segment first, the segment's iterates are recomputed from its
// checkpoint into `buf` (L <= cap) and the gradient walks back through them. When L > cap (more
// than cap² steps), each step's input is recomputed from the segment's checkpoint instead.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ops/training/mhc_sinkhorn/cuda/tiles.h"
#include "ops/training/mhc_sinkhorn/params.h"

namespace recops::ops::mhc_sinkhorn_ns {

template <class T>
__device__ __forceinline__ T exp_t(T v) {
  if constexpr (std::is_same_v<T, double>)
    return ::exp(v);
  else
    return ::expf(v);
}

// The row-wise softmax of the n x n matrix m, in place (max-shifted: the shift has no gradient).
template <class T>
__device__ __forceinline__ void softmax_rows(T* m, int64_t n) {
#pragma unroll
  for (int64_t i = 0; i < n; ++i) {
    T* r = m + i * n;
    T mx = r[0];
#pragma unroll
    for (int64_t j = 1; j < n; ++j) mx = r[j] > mx ? r[j] : mx;
    T z = 0;
#pragma unroll
    for (int64_t j = 0; j < n; ++j) {
      r[j] = exp_t(r[j] - mx);
      z += r[j];
    }
    const T inv = T(1) / z;
#pragma unroll
    for (int64_t j = 0; j < n; ++j) r[j] *= inv;
  }
}

// One normalisation step in place: m /= (column sums + eps) (cols) or (row sums + eps).
// kCols is a template argument so that, with n known at compile time, every index is a constant
// (the matrix stays in registers).
template <bool kCols, class T>
__device__ __forceinline__ void scale_step_axis(T* m, int64_t n, T eps) {
  const int64_t si = kCols ? n : 1;  // stride between the terms of one sum
  const int64_t sl = kCols ? 1 : n;  // stride between the sums
#pragma unroll
  for (int64_t l = 0; l < n; ++l) {
    T* v = m + l * sl;
    T s = 0;
#pragma unroll
    for (int64_t i = 0; i < n; ++i) s += v[i * si];
    const T r = T(1) / (s + eps);
#pragma unroll
    for (int64_t i = 0; i < n; ++i) v[i * si] *= r;
  }
}

// The step whose input is x, backwards: g <- r·(g − sum_axis g·(x·r)), r = 1 / (sum_axis x + eps).
template <bool kCols, class T>
__device__ __forceinline__ void step_back_axis(const T* x, T* g, int64_t n, T eps) {
  const int64_t si = kCols ? n : 1;
  const int64_t sl = kCols ? 1 : n;
#pragma unroll
  for (int64_t l = 0; l < n; ++l) {
    const T* xv = x + l * sl;
    T* gv = g + l * sl;
    T s = 0;
#pragma unroll
    for (int64_t i = 0; i < n; ++i) s += xv[i * si];
    const T r = T(1) / (s + eps);
    T d = 0;
#pragma unroll
    for (int64_t i = 0; i < n; ++i) d += gv[i * si] * (xv[i * si] * r);
#pragma unroll
    for (int64_t i = 0; i < n; ++i) gv[i * si] = r * (gv[i * si] - d);
  }
}

template <class T>
__device__ __forceinline__ void scale_step(T* m, int64_t n, bool cols, T eps) {
  if (cols)
    scale_step_axis<true>(m, n, eps);
  else
    scale_step_axis<false>(m, n, eps);
}
template <class T>
__device__ __forceinline__ void step_back(const T* x, T* g, int64_t n, bool cols, T eps) {
  if (cols)
    step_back_axis<true>(x, g, n, eps);
  else
    step_back_axis<false>(x, g, n, eps);
}

// Step k (1-based) normalises the columns when k is odd. x_j, the input of step j + 1.
__device__ __forceinline__ bool step_cols(int64_t j) {
  return j % 2 == 0;
}

template <class T>
__device__ __forceinline__ void copy_mat(const T* src, T* dst, int64_t nn) {
#pragma unroll
  for (int64_t k = 0; k < nn; ++k) dst[k] = src[k];
}

// x <- softmax_rows(logits of token t) + eps: x_0.
template <class T>
__device__ __forceinline__ void first_iterate(const T* l, T* x, int64_t n, T eps) {
  const int64_t nn = n * n;
  copy_mat(l, x, nn);
  softmax_rows(x, n);
#pragma unroll
  for (int64_t k = 0; k < nn; ++k) x[k] += eps;
}

// Forward of token t; m: nn elements of scratch (may be the output itself).
template <class T>
__device__ __forceinline__ void forward_token(const Params& p, int64_t n, int64_t t, T* m) {
  const int64_t nn = n * n, steps = 2 * p.iters - 1;
  const T eps = static_cast<T>(p.eps);
  first_iterate(static_cast<const T*>(p.logits) + t * nn, m, n, eps);
  for (int64_t j = 0; j < steps; ++j) scale_step(m, n, step_cols(j), eps);
  T* o = static_cast<T*>(p.out) + t * nn;
  if (o != m) copy_mat(m, o, nn);
}

// Backward of token t. x, g: nn elements each; ck, buf: cap·nn each.
template <class T>
__device__ __forceinline__ void backward_token(const Params& p, int64_t n, int64_t t, T* x, T* g,
                                               T* ck, T* buf, int64_t cap) {
  const int64_t nn = n * n, steps = 2 * p.iters - 1;
  const T eps = static_cast<T>(p.eps);
  const T* l = static_cast<const T*>(p.logits) + t * nn;
  const int64_t L = (steps + cap - 1) / cap;  // steps a segment
  const int64_t segs = (steps + L - 1) / L;   // <= cap
  first_iterate(l, x, n, eps);
  for (int64_t s = 0; s < segs; ++s) {
    copy_mat(x, ck + s * nn, nn);
    if (s + 1 < segs)
      for (int64_t j = s * L; j < (s + 1) * L; ++j) scale_step(x, n, step_cols(j), eps);
  }
  copy_mat(static_cast<const T*>(p.dP) + t * nn, g, nn);
  for (int64_t s = segs - 1; s >= 0; --s) {
    const int64_t j0 = s * L, j1 = j0 + L < steps ? j0 + L : steps;
    if (j1 - j0 <= cap) {
      copy_mat(ck + s * nn, x, nn);
      for (int64_t j = j0; j < j1; ++j) {
        copy_mat(x, buf + (j - j0) * nn, nn);
        if (j + 1 < j1) scale_step(x, n, step_cols(j), eps);
      }
      for (int64_t j = j1 - 1; j >= j0; --j)
        step_back(buf + (j - j0) * nn, g, n, step_cols(j), eps);
    } else {
      for (int64_t j = j1 - 1; j >= j0; --j) {
        copy_mat(ck + s * nn, x, nn);
        for (int64_t i = j0; i < j; ++i) scale_step(x, n, step_cols(i), eps);
        step_back(x, g, n, step_cols(j), eps);
      }
    }
  }
  // dlogits = p ⊙ (g − sum_j g⊙p), p the softmax recomputed (without the eps).
  copy_mat(l, x, nn);
  softmax_rows(x, n);
  T* o = static_cast<T*>(p.out) + t * nn;
#pragma unroll
  for (int64_t i = 0; i < n; ++i) {
    T d = 0;
#pragma unroll
    for (int64_t j = 0; j < n; ++j) d += g[i * n + j] * x[i * n + j];
#pragma unroll
    for (int64_t j = 0; j < n; ++j) o[i * n + j] = x[i * n + j] * (g[i * n + j] - d);
  }
}

// n = D: registers (x, g) and local memory (checkpoints). Grid-stride over the tokens.
template <class T, int D>
__global__ void __launch_bounds__(kThreads) sinkhorn_fast_kernel(const Params p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < p.tokens;
       t += stride) {
    T x[D * D];
    if (!p.backward) {
      forward_token<T>(p, D, t, x);
    } else {
      constexpr int kCap = fast_cap(D);
      T g[D * D];
      T ck[kCap * D * D];
      T buf[kCap * D * D];
      backward_token<T>(p, D, t, x, g, ck, buf, kCap);
    }
  }
}

// Any n, the forward: the iterates in the output itself (global memory).
template <class T>
__global__ void sinkhorn_generic_fwd_kernel(const Params p) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < p.tokens;
       t += stride)
    forward_token<T>(p, p.n, t, static_cast<T*>(p.out) + t * p.n * p.n);
}

// Any n that fits, the backward: each thread's x, g, checkpoints and segment iterates in dynamic
// shared memory ((2 + 2·cap)·n² elements a thread, the launch checked the total).
template <class T>
__global__ void sinkhorn_generic_bwd_kernel(const Params p, int64_t cap) {
  extern __shared__ __align__(16) unsigned char sinkhorn_smem[];
  const int64_t nn = p.n * p.n;
  T* mine =
      reinterpret_cast<T*>(sinkhorn_smem) + static_cast<int64_t>(threadIdx.x) * (2 + 2 * cap) * nn;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < p.tokens;
       t += stride)
    backward_token<T>(p, p.n, t, mine, mine + nn, mine + 2 * nn, mine + (2 + cap) * nn, cap);
}

}  // namespace recops::ops::mhc_sinkhorn_ns
