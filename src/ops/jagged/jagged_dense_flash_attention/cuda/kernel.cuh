// jagged/jagged_dense_flash_attention/cuda/kernel.cuh: cuda_sm80, plain FMA kernels (no tensor
// cores yet; allow_tf32 has no effect). Arithmetic in fp32 (fp64 for fp64). D <= kMaxD: a lane
// holds row elements d = lane + 32 i (masked past D); dot products are lane partials summed by a
// xor butterfly, which gives every lane the same bits. Every output element is written by one
// thread in a fixed order: no atomics, bit-identical runs.
//   fwd_kernel:  a CTA per (b, tile of kCols target columns), kColsPerWarp columns a warp; k's
//                tile staged in shared memory; one pass over l < n_b with an online softmax
//                (max over valid rows only; a -inf score adds nothing).
//   rows_kernel: (backward) a CTA per (b, kWarps rows), a warp per row; loops over column tiles
//                (k, grad, lse and delta = out . grad staged in shared memory); writes dbias rows
//                l < n_b, dq and dv rows.
//   dk_kernel:   (backward) a CTA per (b, column tile): dk[b, :, t] = sum_l q(b,l) ds[l,t] in l
//   order.
// The launcher clears dq, dv and dbias first (truncated rows and dbias rows n_b <= l < S stay 0).
// Work items are flattened (b, tile) indices walked grid-stride: no grid dimension tied to B.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda/check.h"
#include "core/cuda/launch.h"
#include "ops/jagged/common/cuda/acc.cuh"
#include "ops/jagged/jagged_dense_flash_attention/cuda/launch.h"
#include "ops/jagged/jagged_dense_flash_attention/cuda/seq.cuh"
#include "ops/jagged/jagged_dense_flash_attention/cuda/tiles.h"

namespace recops::ops::jagged_dense_flash_attention_ns {
namespace dev {
using jagged_dev::from_acc;
using jagged_dev::to_acc;

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class A>
__device__ __forceinline__ A neg_inf() {
  return -static_cast<A>(INFINITY);
}

__device__ __forceinline__ float ex(float x) {
  return expf(x);
}
__device__ __forceinline__ double ex(double x) {
  return ::exp(x);
}
__device__ __forceinline__ float ln(float x) {
  return logf(x);
}
__device__ __forceinline__ double ln(double x) {
  return ::log(x);
}

template <class A>
__device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// A row of D elements (stride 1) into registers, lane's share, 0 past D.
template <class T, class A>
__device__ __forceinline__ void load_row(const T* row, int64_t D, int lane, A (&r)[kMaxNi]) {
#pragma unroll
  for (int i = 0; i < kMaxNi; ++i) {
    const int d = lane + 32 * i;
    r[i] = d < D ? to_acc(row[d]) : A(0);
  }
}
template <class A>
__device__ __forceinline__ A dot_sh(const A (&r)[kMaxNi], const A* sh, int lane) {
  A s = 0;
#pragma unroll
  for (int i = 0; i < kMaxNi; ++i) s += r[i] * sh[lane + 32 * i];
  return warp_sum(s);
}

// kS[j][d] = k[b, d, t0 + j] (0 outside [T) x [D)); all threads; t fastest (k's usual stride 1).
template <class T, class A>
__device__ __forceinline__ void stage_k(const Params& p, int64_t b, int64_t t0, A (*kS)[kMaxD]) {
  const T* k = static_cast<const T*>(p.k) + b * p.k_sb;
  for (int e = threadIdx.x; e < kCols * kMaxD; e += kThreads) {
    const int j = e % kCols, d = e / kCols;
    const int64_t t = t0 + j;
    kS[j][d] = (t < p.T && d < p.D) ? to_acc(k[d * p.k_sd + t * p.k_st]) : A(0);
  }
}
// gS[j][d] = grad[b, t0 + j, d]; d fastest.
template <class T, class A>
__device__ __forceinline__ void stage_g(const Params& p, int64_t b, int64_t t0, A (*gS)[kMaxD]) {
  const T* g = static_cast<const T*>(p.grad) + b * p.grad_sb;
  for (int e = threadIdx.x; e < kCols * kMaxD; e += kThreads) {
    const int d = e % kMaxD, j = e / kMaxD;
    const int64_t t = t0 + j;
    gS[j][d] = (t < p.T && d < p.D) ? to_acc(g[t * p.grad_st + d]) : A(0);
  }
}
// delta[t] = out[b, t, :] . grad[b, t, :] (grad from gS row j); one warp.
template <class T, class A>
__device__ __forceinline__ A delta_of(const Params& p, int64_t b, int64_t t, const A* gj,
                                      int lane) {
  A r[kMaxNi];
  load_row(static_cast<const T*>(p.out) + b * p.out_sb + t * p.out_st, p.D, lane, r);
  return dot_sh(r, gj, lane);
}
template <class T, class A>
__device__ __forceinline__ A bias_at(const Params& p, int64_t b, int64_t l, int64_t t) {
  return to_acc(static_cast<const T*>(p.bias)[b * p.bias_sb + l * p.bias_sl + t * p.bias_st]);
}

template <class T>
__global__ void __launch_bounds__(kThreads) fwd_kernel(const Params p) {
  using A = Acc<T>;
  __shared__ A kS[kCols][kMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t ntc = (p.T + kCols - 1) / kCols;
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  for (int64_t item = blockIdx.x; item < p.B * ntc; item += gridDim.x) {
    const int64_t b = item / ntc, t0 = (item % ntc) * kCols;
    const Seq s = seq_of(p, b);
    __syncthreads();  // the previous item's reads of kS are done
    stage_k<T>(p, b, t0, kS);
    __syncthreads();
    A m[kColsPerWarp], sum[kColsPerWarp], acc[kColsPerWarp][kMaxNi];
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      m[c] = neg_inf<A>(), sum[c] = 0;
#pragma unroll
      for (int i = 0; i < kMaxNi; ++i) acc[c][i] = 0;
    }
    for (int64_t l = 0; l < s.n; ++l) {
      A qr[kMaxNi], vr[kMaxNi];
      load_row(q + (s.start + l) * p.q_row, p.D, lane, qr);
      load_row(v + (s.start + l) * p.v_row, p.D, lane, vr);
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c) {
        const int j = warp * kColsPerWarp + c;
        if (t0 + j >= p.T) break;  // warp-uniform
        const A x = dot_sh(qr, kS[j], lane) + bias_at<T, A>(p, b, l, t0 + j);
        if (x == neg_inf<A>()) continue;  // adds exp(-inf) = 0
        if (x > m[c]) {  // the max grows: rescale the sums (nothing to rescale at -inf)
          const A r = m[c] == neg_inf<A>() ? A(0) : ex(m[c] - x);
          sum[c] *= r;
#pragma unroll
          for (int i = 0; i < kMaxNi; ++i) acc[c][i] *= r;
          m[c] = x;
        }
        const A e = ex(x - m[c]);  // a NaN score makes the column NaN
        sum[c] += e;
#pragma unroll
        for (int i = 0; i < kMaxNi; ++i) acc[c][i] += e * vr[i];
      }
    }
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      const int64_t t = t0 + warp * kColsPerWarp + c;
      if (t >= p.T) break;
      const bool none = m[c] == neg_inf<A>();  // no row, or every score -inf
      if (p.lse && lane == 0)
        static_cast<float*>(p.lse)[b * p.T + t] =
            none ? -INFINITY : static_cast<float>(m[c] + ln(sum[c]));
      const A r = none ? A(0) : A(1) / sum[c];
      T* o = static_cast<T*>(p.out) + (b * p.T + t) * p.D;
#pragma unroll
      for (int i = 0; i < kMaxNi; ++i) {
        const int d = lane + 32 * i;
        if (d < p.D) o[d] = from_acc<T>(acc[c][i] * r);
      }
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) rows_kernel(const Params p, int64_t row_tiles) {
  using A = Acc<T>;
  __shared__ A kS[kCols][kMaxD];
  __shared__ A gS[kCols][kMaxD];
  __shared__ A lseS[kCols], deltaS[kCols];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  for (int64_t item = blockIdx.x; item < p.B * row_tiles; item += gridDim.x) {
    const int64_t b = item / row_tiles, l0 = (item % row_tiles) * kWarps;
    const Seq s = seq_of(p, b);
    if (l0 >= s.n) continue;  // CTA-uniform
    const int64_t l = l0 + warp;
    const bool active = l < s.n;
    A qr[kMaxNi], vr[kMaxNi], gq[kMaxNi], gv[kMaxNi];
    if (active) {
      load_row(q + (s.start + l) * p.q_row, p.D, lane, qr);
      load_row(v + (s.start + l) * p.v_row, p.D, lane, vr);
    }
#pragma unroll
    for (int i = 0; i < kMaxNi; ++i) gq[i] = 0, gv[i] = 0;
    for (int64_t t0 = 0; t0 < p.T; t0 += kCols) {
      __syncthreads();  // the previous tile's (or item's) reads are done
      stage_k<T>(p, b, t0, kS);
      stage_g<T>(p, b, t0, gS);
      __syncthreads();
      for (int j = warp; j < kCols; j += kWarps) {
        const int64_t t = t0 + j;
        const A dl = t < p.T ? delta_of<T>(p, b, t, gS[j], lane) : A(0);
        if (lane == 0) {
          deltaS[j] = dl;
          lseS[j] =
              t < p.T
                  ? static_cast<A>(static_cast<const float*>(p.lse)[b * p.lse_sb + t * p.lse_st])
                  : A(0);
        }
      }
      __syncthreads();
      if (!active) continue;
      for (int j = 0; j < kCols && t0 + j < p.T; ++j) {
        const int64_t t = t0 + j;
        const A x = dot_sh(qr, kS[j], lane) + bias_at<T, A>(p, b, l, t);
        const A L = lseS[j];
        const A pr = L == neg_inf<A>() ? A(0) : ex(x - L);
        const A ds = pr * (dot_sh(vr, gS[j], lane) - deltaS[j]);
        if (lane == 0) static_cast<T*>(p.dbias)[(b * p.S + l) * p.T + t] = from_acc<T>(ds);
#pragma unroll
        for (int i = 0; i < kMaxNi; ++i) {
          gq[i] += ds * kS[j][lane + 32 * i];
          gv[i] += pr * gS[j][lane + 32 * i];
        }
      }
    }
    if (!active) continue;
    T* dq = static_cast<T*>(p.dq) + (s.start + l) * p.D;
    T* dv = static_cast<T*>(p.dv) + (s.start + l) * p.D;
#pragma unroll
    for (int i = 0; i < kMaxNi; ++i) {
      const int d = lane + 32 * i;
      if (d < p.D) dq[d] = from_acc<T>(gq[i]), dv[d] = from_acc<T>(gv[i]);
    }
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads) dk_kernel(const Params p) {
  using A = Acc<T>;
  __shared__ A kS[kCols][kMaxD];
  __shared__ A gS[kCols][kMaxD];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t ntc = (p.T + kCols - 1) / kCols;
  const T* q = static_cast<const T*>(p.q);
  const T* v = static_cast<const T*>(p.v);
  for (int64_t item = blockIdx.x; item < p.B * ntc; item += gridDim.x) {
    const int64_t b = item / ntc, t0 = (item % ntc) * kCols;
    const Seq s = seq_of(p, b);
    __syncthreads();
    stage_k<T>(p, b, t0, kS);
    stage_g<T>(p, b, t0, gS);
    __syncthreads();
    A dl[kColsPerWarp], L[kColsPerWarp], acc[kColsPerWarp][kMaxNi];
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      const int j = warp * kColsPerWarp + c;
      const int64_t t = t0 + j;
      dl[c] = t < p.T ? delta_of<T>(p, b, t, gS[j], lane) : A(0);
      L[c] = t < p.T ? static_cast<A>(static_cast<const float*>(p.lse)[b * p.lse_sb + t * p.lse_st])
                     : A(0);
#pragma unroll
      for (int i = 0; i < kMaxNi; ++i) acc[c][i] = 0;
    }
    for (int64_t l = 0; l < s.n; ++l) {
      A qr[kMaxNi], vr[kMaxNi];
      load_row(q + (s.start + l) * p.q_row, p.D, lane, qr);
      load_row(v + (s.start + l) * p.v_row, p.D, lane, vr);
#pragma unroll
      for (int c = 0; c < kColsPerWarp; ++c) {
        const int j = warp * kColsPerWarp + c;
        if (t0 + j >= p.T) break;
        const A x = dot_sh(qr, kS[j], lane) + bias_at<T, A>(p, b, l, t0 + j);
        const A pr = L[c] == neg_inf<A>() ? A(0) : ex(x - L[c]);
        const A ds = pr * (dot_sh(vr, gS[j], lane) - dl[c]);
#pragma unroll
        for (int i = 0; i < kMaxNi; ++i) acc[c][i] += ds * qr[i];
      }
    }
    T* dk = static_cast<T*>(p.dk) + b * p.D * p.T;
#pragma unroll
    for (int c = 0; c < kColsPerWarp; ++c) {
      const int64_t t = t0 + warp * kColsPerWarp + c;
      if (t >= p.T) break;
#pragma unroll
      for (int i = 0; i < kMaxNi; ++i) {
        const int d = lane + 32 * i;
        if (d < p.D) dk[d * p.T + t] = from_acc<T>(acc[c][i]);
      }
    }
  }
}

inline dim3 grid_of(int64_t items) {
  return dim3(static_cast<unsigned>(std::min<int64_t>(items, kMaxGrid)));
}
}  // namespace dev

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  const int64_t items = p.B * ((p.T + kCols - 1) / kCols);
  if (items == 0) return Status::Ok();
  return RECOPS_LAUNCH_KERNEL("jagged_dense_flash_attention", dev::fwd_kernel<T>,
                              dev::grid_of(items), dim3(kThreads), 0, ctx.stream, p);
}

template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  const char* op = "jagged_dense_flash_attention_bwd";
  auto stream = static_cast<cudaStream_t>(ctx.stream);
  const size_t rows = static_cast<size_t>(p.total_L * p.D) * sizeof(T);
  const size_t bias = static_cast<size_t>(p.B * p.S * p.T) * sizeof(T);
  if (rows) RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p.dq, 0, rows, stream));
  if (rows) RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p.dv, 0, rows, stream));
  if (bias) RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p.dbias, 0, bias, stream));
  // Rows that can be valid: l < min(max_L, total_L).
  const int64_t row_tiles = (std::min(p.max_L, p.total_L) + kWarps - 1) / kWarps;
  if (p.B * row_tiles > 0 && p.T > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, dev::rows_kernel<T>,
                                                dev::grid_of(p.B * row_tiles), dim3(kThreads), 0,
                                                ctx.stream, p, row_tiles));
  const int64_t col_items = p.B * ((p.T + kCols - 1) / kCols);
  if (col_items == 0) return Status::Ok();
  return RECOPS_LAUNCH_KERNEL(op, dev::dk_kernel<T>, dev::grid_of(col_items), dim3(kThreads), 0,
                              ctx.stream, p);
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
