// training/chunk_loss/cuda/kernel.cuh: the device code and the per-dtype launchers
// (launch_fwd<T>, launch_bwd<T>)
// that inst/ instantiates. fp32 statistics throughout.
//
// Per token chunk (rows r0.., n of them) and vocab tile (columns v0.., vc of them):
//   Z = h_c·W_tileᵀ by cuBLAS (bf16/fp16/fp32 operands, fp32 accumulation and output) into the
//   workspace tile; stats_kernel (one CTA per row, the online (max, sum of exp) pair of
//   training/common/cuda/ce_row.cuh) merges the tile's lse into the row's (logaddexp), and in the
//   forward the sum of the capped logits and the label's logit. finish_fwd_kernel (one CTA) turns
//   the rows into loss/z_loss, the "sum"/"mean" totals in fixed-order fp64.
//   Backward: rows_init_kernel (one CTA) computes Dn and s_i on the device; per tile grad_kernel
//   writes G rounded once to T in place of Z; cuBLAS writes G·W into d_hidden's rows (with vocab
//   tiles: adds G·W_tile into the fp32 dh accumulator, cast per chunk) and adds G_ᵀ·h_c into
//   the dW accumulator (fp32, or dW itself in T with accum_dtype = input); colsum_kernel adds G's
//   columns to db in row order. The chunks run in order on the stream; no atomics, no split-K, so
//   the results do not depend on timing.
//   chunk_loss_fwd (p.fused: the backward with s_i for g = 1): stats_kernel also keeps the
//   forward's row sums for every row not ignored, and finish_fwd_kernel writes the loss after the
//   chunks, so each logit tile is computed once (twice with vocab tiles), as in the backward.
#pragma once

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>

#include "core/cuda/check.h"
#include "core/cuda/cublas.h"
#include "core/cuda/launch.h"
#include "ops/training/chunk_loss/cuda/launch.h"
#include "ops/training/chunk_loss/cuda/tiles.h"
#include "ops/training/common/cuda/ce_row.cuh"
#include "ops/training/common/cuda/row_norm.cuh"

namespace recops::ops::chunk_loss_ns {

using training_dev::capped;
using training_dev::ce_counted;
using training_dev::ce_label_at;
using training_dev::cta_combine;
using training_dev::cta_sum;
using training_dev::from_float;
using training_dev::MaxSum;
using training_dev::to_float;

// The workspace pieces (params.h's Layout) and the current chunk and tile.
struct Dev {
  float *r_loss, *r_z, *r_w, *r_lse;  // [N] each
  float* z;                           // [Nc, Vc] logit tile
  void* g;                            // [Nc, Vc] G in T, row stride gld (compact: over z)
  float* dhacc;                       // [Nc, D] (compact: vocab tiles only)
  float* dwacc;                       // [V, D]
  float* dbacc;                       // [V]
  int64_t r0, n, v0, vc;
  int64_t gld;   // G's row stride in elements of T (params.h's g_ld)
  bool compact;  // G over Z; with one tile, dh straight into d_hidden
};

template <class T>
__device__ __forceinline__ float tw_at(const Params& p, int64_t i) {
  if (p.token_weight == nullptr) return 1.f;
  if (p.tw_dtype == DType::fp32) return static_cast<const float*>(p.token_weight)[i];
  return to_float(static_cast<const T*>(p.token_weight)[i]);
}
template <class T>
__device__ __forceinline__ float bias_at(const Params& p, int64_t j) {
  return p.bias ? to_float(static_cast<const T*>(p.bias)[j]) : 0.f;
}
__device__ __forceinline__ float logaddexp(float a, float b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return fmaxf(a, b) + log1pf(expf(-fabsf(a - b)));
}

// Forward: r_loss = r_z = 0. Backward: r_w = s_i (Dn summed here for "mean"). Fused: both. All:
// r_lse = -inf. One CTA.
template <class T>
__global__ void __launch_bounds__(kReduceThreads) rows_init_kernel(Params p, Dev d) {
  __shared__ double sm[1][32];
  double dn = 1.0;
  if (p.bwd && p.reduction == Red::mean) {  // uniform over the CTA
    double v[1] = {0};
    for (int64_t i = threadIdx.x; i < p.N; i += blockDim.x)
      if (ce_counted(p, ce_label_at(p, i))) v[0] += tw_at<T>(p, i);
    cta_sum(v, sm);
    dn = v[0];
  }
  for (int64_t i = threadIdx.x; i < p.N; i += blockDim.x) {
    d.r_lse[i] = -INFINITY;
    if (!p.bwd || p.fused) {
      d.r_loss[i] = 0.f;
      d.r_z[i] = 0.f;
      if (!p.bwd) continue;
    }
    float s = 0.f;
    if (ce_counted(p, ce_label_at(p, i))) {
      // grad nullptr: chunk_loss_fwd's unit upstream gradient.
      const float g =
          p.grad ? static_cast<const float*>(p.grad)[p.reduction == Red::none ? i : 0] : 1.f;
      s = g * tw_at<T>(p, i);
      if (p.reduction == Red::mean) s = dn == 0 ? 0.f : static_cast<float>(s / dn);
    }
    d.r_w[i] = s;
  }
}

// The tile's statistics of the rows that need them (forward and fused: not ignored; backward:
// s_i != 0), with the forward's sums (forward and fused).
template <class T>
__global__ void __launch_bounds__(kMaxThreads) stats_kernel(Params p, Dev d) {
  __shared__ MaxSum sm_ms[32];
  __shared__ float sm_z[32];
  const float cap = static_cast<float>(p.softcap);
  for (int64_t i = blockIdx.x; i < d.n; i += gridDim.x) {
    const int64_t row = d.r0 + i, y = ce_label_at(p, row);
    const bool skip = p.bwd && !p.fused ? d.r_w[row] == 0.f : !ce_counted(p, y);
    if (skip) continue;  // the same for the whole CTA
    const float* z = d.z + i * d.vc;
    MaxSum ms{-INFINITY, 0.f};
    float sz = 0.f;
    for (int64_t j = threadIdx.x; j < d.vc; j += blockDim.x) {
      const float x = capped(z[j] + bias_at<T>(p, d.v0 + j), cap);
      sz += x;
      if (x > ms.m) {
        ms.s = ms.m == -INFINITY ? 0.f : ms.s * expf(ms.m - x);
        ms.m = x;
      }
      if (ms.m != -INFINITY) ms.s += expf(x - ms.m);
    }
    cta_combine(ms, sz, sm_ms, sm_z);
    if (threadIdx.x == 0) {
      // A NaN sum (a NaN logit, which x > ms.m passes over, or +inf with -inf): lse NaN, as the
      // CPU's and the golden's (a tile of NaN only gave -inf).
      d.r_lse[row] = logaddexp(d.r_lse[row], sz == sz ? ms.m + logf(ms.s) : sz);
      if (!p.bwd || p.fused) {
        d.r_loss[row] += sz;
        if (y >= d.v0 && y < d.v0 + d.vc) d.r_z[row] = capped(z[y - d.v0] + bias_at<T>(p, y), cap);
      }
    }
  }
}

// loss/z_loss from the rows (r_lse, r_loss = the sum of the capped logits, r_z = the label's). One
// CTA.
template <class T>
__global__ void __launch_bounds__(kReduceThreads) finish_fwd_kernel(Params p, Dev d) {
  __shared__ double sm[3][32];
  const float eps = static_cast<float>(p.label_smoothing), lam = static_cast<float>(p.z_loss_scale);
  const bool none = p.reduction == Red::none;
  double v[3] = {0, 0, 0};
  for (int64_t i = threadIdx.x; i < p.N; i += blockDim.x) {
    float l = 0.f, zl = 0.f, w = 0.f;
    if (ce_counted(p, ce_label_at(p, i))) {
      const float lse = d.r_lse[i];
      w = tw_at<T>(p, i);
      zl = lam * lse * lse;
      // The smoothing term only when eps != 0 (no 0 * inf from a -inf logit; torch's formula).
      const float smooth = eps != 0.f ? eps * (lse - d.r_loss[i] / static_cast<float>(p.V)) : 0.f;
      l = (1.f - eps) * (lse - d.r_z[i]) + smooth + zl;
      l *= w;
      zl *= w;
    }
    if (none) {
      static_cast<float*>(p.loss)[i] = l;
      static_cast<float*>(p.z_loss)[i] = zl;
    } else {
      v[0] += l, v[1] += zl, v[2] += w;
    }
  }
  if (none) return;
  cta_sum(v, sm);
  if (threadIdx.x == 0) {
    const double dn = p.reduction == Red::mean ? v[2] : 1.0;
    static_cast<float*>(p.loss)[0] = dn == 0 ? 0.f : static_cast<float>(v[0] / dn);
    static_cast<float*>(p.z_loss)[0] = dn == 0 ? 0.f : static_cast<float>(v[1] / dn);
  }
}

// G of the tile, rounded once to T: s_i [(1 + 2 lambda lse) p_ij - (1 - eps)[j = y] - eps / V]
// (x (1 - tanh^2(z / c)) with softcap); 0 for rows with s_i = 0. In the compact layout G's row
// starts where its Z row does (params.h, g_ld): for 16-bit T the CTA reads a block of
// kGradPer·blockDim Z values, syncs, then writes their G, whose bytes (2j) land on Z values at or
// before the block, which every thread has read by then, and never on a later block's.
template <class T>
__global__ void __launch_bounds__(kMaxThreads) grad_kernel(Params p, Dev d) {
  const float cap = static_cast<float>(p.softcap), eps = static_cast<float>(p.label_smoothing);
  const float lam = static_cast<float>(p.z_loss_scale);
  const int64_t step = static_cast<int64_t>(blockDim.x) * kGradPer;
  for (int64_t i = blockIdx.x; i < d.n; i += gridDim.x) {
    const int64_t row = d.r0 + i, y = ce_label_at(p, row);
    const float s = d.r_w[row], lse = d.r_lse[row];
    const float a = s * (1.f + 2.f * lam * lse), bias = s * eps / static_cast<float>(p.V);
    const float hit = s * (1.f - eps);
    const float* z = d.z + i * d.vc;
    T* g = static_cast<T*>(d.g) + i * d.gld;
    for (int64_t j0 = 0; j0 < d.vc; j0 += step) {
      float out[kGradPer];
#pragma unroll
      for (int k = 0; k < kGradPer; ++k) {
        const int64_t j = j0 + k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
        out[k] = 0.f;
        if (s != 0.f && j < d.vc) {
          const float x = z[j] + bias_at<T>(p, d.v0 + j);
          const float t = cap > 0.f ? tanhf(x / cap) : 0.f;
          const float zc = cap > 0.f ? cap * t : x;
          const float v = a * expf(zc - lse) - bias - (d.v0 + j == y ? hit : 0.f);
          out[k] = cap > 0.f ? v * (1.f - t * t) : v;
        }
      }
      if constexpr (sizeof(T) < sizeof(float))
        if (d.compact) __syncthreads();  // uniform over the grid
#pragma unroll
      for (int k = 0; k < kGradPer; ++k) {
        const int64_t j = j0 + k * static_cast<int64_t>(blockDim.x) + threadIdx.x;
        if (j < d.vc) g[j] = from_float<T>(out[k]);
      }
    }
  }
}

// db[v0 + j] += Σ_i G[i, j] (i ascending), rounded to T with accum_dtype = input.
template <class T>
__global__ void __launch_bounds__(kColThreads) colsum_kernel(Params p, Dev d) {
  const T* g = static_cast<const T*>(d.g);
  const int64_t ld = d.gld;
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < d.vc;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float s = 0.f;
    for (int64_t i = 0; i < d.n; ++i) s += to_float(g[i * ld + j]);
    float acc = d.dbacc[d.v0 + j] + s;
    if (p.accum_low) acc = to_float(from_float<T>(acc));
    d.dbacc[d.v0 + j] = acc;
  }
}

template <class T>
__global__ void __launch_bounds__(kColThreads) cast_kernel(const float* src, T* dst, int64_t n) {
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; k < n;
       k += static_cast<int64_t>(gridDim.x) * blockDim.x)
    dst[k] = from_float<T>(src[k]);
}

template <class T>
constexpr cudaDataType_t cuda_type() {
  if constexpr (std::is_same_v<T, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, __half>)
    return CUDA_R_16F;
  else
    return CUDA_R_16BF;
}

inline dim3 flat_grid(int64_t n) {
  return dim3(static_cast<unsigned>(
      std::clamp<int64_t>((n + kColThreads - 1) / kColThreads, 1, kMaxCastBlocks)));
}

template <class T, class L, class R>
Status backward_tiles(const Params& p, const Context& ctx, Dev& d, cublasHandle_t h, L&& logits,
                      R&& row_launch);

template <class T, bool kBwd>
Status run_dtype(const Params& p, const Context& ctx) {
  const char* op = p.fused ? "chunk_loss_fwd" : p.bwd ? "chunk_loss_bwd" : "chunk_loss";
  if (p.D > INT_MAX || p.Vc > INT_MAX || p.Nc > INT_MAX)
    return Status(StatusCode::invalid_argument,
                  std::string(op) +
                      ": D, the token chunk and the vocab tile must each be below 2^31 on CUDA "
                      "(cuBLAS sizes are int)");
  const Layout l = layout_of(p);
  char* ws = static_cast<char*>(p.workspace);
  // The chunk pieces: in d_weight until its final cast when they fit (params.h), else in the
  // workspace.
  char* sp = l.in_dw ? static_cast<char*>(p.dw) : ws;
  Dev d{};
  d.r_loss = reinterpret_cast<float*>(sp + l.rows);
  d.r_z = d.r_loss + p.N;
  d.r_w = d.r_z + p.N;
  d.r_lse = d.r_w + p.N;
  d.z = reinterpret_cast<float*>(sp + l.z);
  d.g = sp + l.g;
  d.compact = l.compact;
  d.dhacc = reinterpret_cast<float*>(sp + l.dhacc);
  d.dbacc = reinterpret_cast<float*>(sp + l.dbacc);
  d.dwacc = reinterpret_cast<float*>(ws + l.dwacc);
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  cublasHandle_t h = nullptr;
  if (p.N > 0) RECOPS_RETURN_IF_ERROR(core::cuda::cublas_handle(stream, &h));
  const T* H = static_cast<const T*>(p.hidden);
  const T* W = static_cast<const T*>(p.weight);
  const cudaDataType_t tt = cuda_type<T>();
  const float one = 1.f, zero = 0.f;
  const int iD = static_cast<int>(p.D);

  RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, rows_init_kernel<T>, dim3(1),
                                              dim3(kReduceThreads), 0, ctx.stream, p, d));
  // Z tile (row-major [n, vc]; column-major [vc, n]) = W_tile (OP_T of column-major [D, vc]) x
  // h_c (column-major [D, n]).
  auto logits = [&]() -> Status {
    RECOPS_CUBLAS_RETURN_IF_ERROR(
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(d.vc), static_cast<int>(d.n), iD,
                     &one, W + d.v0 * p.D, tt, iD, H + d.r0 * p.D, tt, iD, &zero, d.z, CUDA_R_32F,
                     static_cast<int>(d.vc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    return Status::Ok();
  };
  auto row_launch = [&](auto kernel) {
    return RECOPS_LAUNCH_KERNEL(op, kernel,
                                dim3(static_cast<unsigned>(std::min(d.n, kMaxRowBlocks))),
                                dim3(row_threads(d.vc)), 0, ctx.stream, p, d);
  };

  if constexpr (!kBwd) {
    for (d.r0 = 0; d.r0 < p.N; d.r0 += p.Nc) {
      d.n = std::min(p.Nc, p.N - d.r0);
      for (d.v0 = 0; d.v0 < p.V; d.v0 += p.Vc) {
        d.vc = std::min(p.Vc, p.V - d.v0);
        RECOPS_RETURN_IF_ERROR(logits());
        RECOPS_RETURN_IF_ERROR(row_launch(stats_kernel<T>));
      }
    }
    return RECOPS_LAUNCH_KERNEL(op, finish_fwd_kernel<T>, dim3(1), dim3(kReduceThreads), 0,
                                ctx.stream, p, d);
  } else {
    RECOPS_RETURN_IF_ERROR(backward_tiles<T>(p, ctx, d, h, logits, row_launch));
    if (p.fused)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, finish_fwd_kernel<T>, dim3(1),
                                                  dim3(kReduceThreads), 0, ctx.stream, p, d));
    // Last: the cast of dW into d_weight, which may hold the pieces read above (in_dw).
    if (p.accum_low) return Status::Ok();
    return RECOPS_LAUNCH_KERNEL(op, cast_kernel<T>, flat_grid(p.V * p.D), dim3(kColThreads), 0,
                                ctx.stream, static_cast<const float*>(d.dwacc),
                                static_cast<T*>(p.dw), p.V * p.D);
  }
}

// The backward after rows_init_kernel: the chunks in order, then the cast of db (run_dtype casts
// dW after the loss).
template <class T, class L, class R>
Status backward_tiles(const Params& p, const Context& ctx, Dev& d, cublasHandle_t h, L&& logits,
                      R&& row_launch) {
  const char* op = p.fused ? "chunk_loss_fwd" : "chunk_loss_bwd";
  cudaStream_t stream = static_cast<cudaStream_t>(ctx.stream);
  const T* H = static_cast<const T*>(p.hidden);
  const T* W = static_cast<const T*>(p.weight);
  const cudaDataType_t tt = cuda_type<T>();
  const float one = 1.f, zero = 0.f;
  const int iD = static_cast<int>(p.D);

  const size_t vd = static_cast<size_t>(p.V * p.D);
  if (!p.accum_low)  // else the workspace has no fp32 dW (params.h)
    RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(d.dwacc, 0, vd * sizeof(float), stream));
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(d.dbacc, 0, static_cast<size_t>(p.V) * sizeof(float), stream));
  // dW's accumulator: fp32, or dW itself in T with accum_dtype = input (cuBLAS rounds C once per
  // chunk, after the fp32 sum).
  void* dw_acc = p.accum_low ? p.dw : static_cast<void*>(d.dwacc);
  const cudaDataType_t dw_type = p.accum_low ? tt : CUDA_R_32F;
  if (p.accum_low) RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(p.dw, 0, vd * sizeof(T), stream));
  const bool one_tile = p.Vc >= p.V, dh_direct = d.compact && one_tile;
  for (d.r0 = 0; d.r0 < p.N; d.r0 += p.Nc) {
    d.n = std::min(p.Nc, p.N - d.r0);
    if (!one_tile)  // pass 1: the rows' lse over every tile
      for (d.v0 = 0; d.v0 < p.V; d.v0 += p.Vc) {
        d.vc = std::min(p.Vc, p.V - d.v0);
        RECOPS_RETURN_IF_ERROR(logits());
        RECOPS_RETURN_IF_ERROR(row_launch(stats_kernel<T>));
      }
    for (d.v0 = 0; d.v0 < p.V; d.v0 += p.Vc) {
      d.vc = std::min(p.Vc, p.V - d.v0);
      RECOPS_RETURN_IF_ERROR(logits());
      if (one_tile) RECOPS_RETURN_IF_ERROR(row_launch(stats_kernel<T>));
      d.gld = g_ld(p, d.compact, d.vc);
      RECOPS_RETURN_IF_ERROR(row_launch(grad_kernel<T>));
      const int ivc = static_cast<int>(d.vc), in = static_cast<int>(d.n);
      const int ldg = static_cast<int>(d.gld);
      // dh_c (column-major [D, n]) (+)= W_tile (column-major [D, vc]) x G (column-major [vc, n],
      // leading dimension ldg): compact with one tile straight into d_hidden's rows (T), else
      // into the fp32 accumulator.
      if (dh_direct)
        RECOPS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, iD, in, ivc, &one,
                                                   W + d.v0 * p.D, tt, iD, d.g, tt, ldg, &zero,
                                                   static_cast<T*>(p.dh) + d.r0 * p.D, tt, iD,
                                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      else
        RECOPS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, iD, in, ivc, &one,
                                                   W + d.v0 * p.D, tt, iD, d.g, tt, ldg,
                                                   d.v0 == 0 ? &zero : &one, d.dhacc, CUDA_R_32F,
                                                   iD, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      // dW_tile (column-major [D, vc]) += h_c (column-major [D, n]) x G (OP_T of [vc, n]).
      char* dw_tile = static_cast<char*>(dw_acc) +
                      static_cast<size_t>(d.v0 * p.D) * (p.accum_low ? sizeof(T) : sizeof(float));
      RECOPS_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
          h, CUBLAS_OP_N, CUBLAS_OP_T, iD, ivc, in, &one, H + d.r0 * p.D, tt, iD, d.g, tt, ldg,
          &one, dw_tile, dw_type, iD, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      if (p.db)
        RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, colsum_kernel<T>, flat_grid(d.vc),
                                                    dim3(kColThreads), 0, ctx.stream, p, d));
    }
    const int64_t cnt = d.n * p.D;
    if (!dh_direct)
      RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(op, cast_kernel<T>, flat_grid(cnt),
                                                  dim3(kColThreads), 0, ctx.stream, d.dhacc,
                                                  static_cast<T*>(p.dh) + d.r0 * p.D, cnt));
  }
  if (p.db)
    RECOPS_RETURN_IF_ERROR(
        RECOPS_LAUNCH_KERNEL(op, cast_kernel<T>, flat_grid(p.V), dim3(kColThreads), 0, ctx.stream,
                             static_cast<const float*>(d.dbacc), static_cast<T*>(p.db), p.V));
  return Status::Ok();
}

template <class T>
Status launch_fwd(const Params& p, const Context& ctx) {
  return run_dtype<T, false>(p, ctx);
}
template <class T>
Status launch_bwd(const Params& p, const Context& ctx) {
  return run_dtype<T, true>(p, ctx);
}

}  // namespace recops::ops::chunk_loss_ns
