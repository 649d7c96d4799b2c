// training/chunk_gated_delta_rule_bwd_dhu/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (sequence n, value head hv, V tile of BV columns), one block each (grid-stride).
// The block keeps its slice dS[K, BV] of the running state gradient in shared memory in S = fp32
// (fp64 for fp64 q), as the CPU path does, and walks the sequence's chunks from the last:
//   1. dh[chunk] = dS, rounded once to dh's dtype;
//   2. dv2_t = dv_local_t + Σ_i (f_t·k_t[i])·dS[i, :], f_t = exp(G_L − G_t): each thread owns
//      (t, v) pairs (v = thread % BV), the k rows staged K-tile by K-tile; dv2 rounded once to its
//      dtype in global memory and kept unrounded (S) in shared memory for step 3;
//   3. dS[i, :] = r_i·dS[i, :] + Σ_t (scale·exp(G_t)·q_t[i])·do_t − w_t[i]·dv2_t, each thread
//      owning (i, v) elements of a K tile, the q and w rows staged per K tile; r_i = exp(G_L), or
//      with gk (KDA's per-channel gate, its row L at hv) exp(G_L)·exp(Gk_L[i]) applied in a pass
//      over dS before the update (the CPU path's row factor, formed the same way; the first
//      factor 1 without g); dv2 carries no gk factor.
// and dh0 = dS (fp32) after the first chunk. Only exponentials of G_L, G_t and G_L − G_t are
// formed; for S = fp32 they are exp/exp2 of the float widened to double, rounded to float (the
// correctly rounded value the CPU's std::exp(float) gives to within its own last bit).
//
// Chunk numbering of dh: without seq_offsets chunk c of batch row n is dh[n, c]; with seq_offsets
// sequence n's chunks start at Σ_{m<n} ceil(len_m / BT), which the block sums itself from the
// offsets (a block reduction, no host read, so the launch stays sync-free and graph-capturable).
// Offsets are clamped to [0, T] (and each end to at least its start) before use, and dh indices at
// or past B·NT are not written, so even unvalidated offsets never index outside the tensors.
// spare_chunks_kernel zeroes dh's chunks past the sequences' count (offsets only).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/cuda/tiles.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/params.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {

// Element i of a floating tensor of dtype t, as S (fp64 -> fp32 rounds once, the rest exact).
template <class S>
__device__ __forceinline__ S load(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(__half2float(static_cast<const __half*>(base)[i]));
    case DType::bf16:
      return static_cast<S>(__bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]));
    default: return S(0);
  }
}

// x into element i of a floating tensor of dtype t, rounded once. fp64 x to a 16-bit dtype: to
// float by round-to-odd first (towards zero, last bit set when inexact), then to nearest even,
// which equals the direct correctly rounded conversion.
template <class S>
__device__ __forceinline__ void store(void* base, DType t, int64_t i, S x) {
  if (t == DType::fp64) {
    static_cast<double*>(base)[i] = static_cast<double>(x);
    return;
  }
  if (t == DType::fp32) {
    static_cast<float*>(base)[i] = static_cast<float>(x);
    return;
  }
  float f;
  if constexpr (std::is_same_v<S, double>) {
    f = __double2float_rz(x);
    if (static_cast<double>(f) != x) f = __int_as_float(__float_as_int(f) | 1);  // NaN stays NaN
  } else {
    f = x;
  }
  if (t == DType::fp16)
    static_cast<__half*>(base)[i] = __float2half_rn(f);
  else if (t == DType::bf16)
    static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(f);
}

template <class S>
__device__ __forceinline__ S gate_exp(S x, bool log2) {
  if constexpr (std::is_same_v<S, double>) {
    return log2 ? exp2(x) : exp(x);
  } else {
    const double d = static_cast<double>(x);
    return static_cast<float>(log2 ? exp2(d) : exp(d));
  }
}

// Sequence n's rows [*a, *e) of the flattened time axis, from clamped offsets.
__device__ __forceinline__ void seq_rows(const Params& p, int64_t n, int64_t* a, int64_t* e) {
  if (!p.seq_offsets) {
    *a = n * p.T;
    *e = *a + p.T;
    return;
  }
  auto at = [&](int64_t m) {
    const int64_t v = p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[m]
                                                  : static_cast<const int64_t*>(p.seq_offsets)[m];
    return v < 0 ? int64_t{0} : (v > p.T ? p.T : v);
  };
  *a = at(n);
  const int64_t end = at(n + 1);
  *e = end < *a ? *a : end;
}

// Σ_{m < n} ceil(len_m / BT) over the block (every thread gets it). `red`: kThreads / 32 slots.
__device__ __forceinline__ int64_t chunks_before(const Params& p, int64_t n, int64_t* red) {
  int64_t part = 0;
  for (int64_t m = threadIdx.x; m < n; m += blockDim.x) {
    int64_t a, e;
    seq_rows(p, m, &a, &e);
    part += (e - a + p.BT - 1) / p.BT;
  }
  for (int d = 16; d > 0; d >>= 1) part += __shfl_down_sync(0xffffffffu, part, d);
  __syncthreads();  // red may still be read from a previous call
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = part;
  __syncthreads();
  int64_t total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += red[w];
  return total;
}

// Dynamic shared memory (S elements): ds [K·BV], kq [BT·KT] (k rows in step 2, scaled q rows in
// step 3), ws [BT·KT], dos [BT·BV], d2s [BT·BV], gs [BT]. blockDim.x = kThreads.
template <class S>
__global__ void __launch_bounds__(kThreads)
    bwd_dhu_kernel(const Params p, int bv_log, int64_t vtiles, int64_t items) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ int64_t red[kThreads / 32];
  const int BV = 1 << bv_log;
  const int64_t K = p.K, V = p.V, BT = p.BT, H = p.H, HV = p.HV;
  S* ds = reinterpret_cast<S*>(smem_raw);
  S* kq = ds + K * BV;
  S* ws = kq + BT * kKT;
  S* dos = ws + BT * kKT;
  S* d2s = dos + BT * BV;
  S* gs = d2s + BT * BV;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid & (BV - 1), ty = tid >> bv_log;
  const int rows_pass = kThreads >> bv_log;  // rows a pass over (t, v) pairs covers
  const int64_t group = HV / H;
  const S scale = static_cast<S>(p.scale);
  const int64_t dh_chunks = p.B * p.NT;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t vt = item % vtiles, nh = item / vtiles;
    const int64_t hv = nh % HV, n = nh / HV, h = hv / group;
    const int64_t v0 = vt * BV;
    const int64_t bv = V - v0 < BV ? V - v0 : BV;
    int64_t a, e;
    seq_rows(p, n, &a, &e);
    const int64_t base = p.seq_offsets ? chunks_before(p, n, red) : n * p.NT;
    const int64_t len = e - a, nchunks = (len + BT - 1) / BT;
    const int64_t state = (n * HV + hv) * K * V;  // dht's and dh0's [K, V] slice
    __syncthreads();                              // the previous item is done with shared memory
    for (int64_t x = tid; x < K * BV; x += kThreads) {
      const int64_t i = x >> bv_log, v = x & (BV - 1);
      ds[x] = p.dht && v < bv ? load<S>(p.dht, p.dht_dtype, state + i * V + v0 + v) : S(0);
    }
    for (int64_t c = nchunks - 1; c >= 0; --c) {
      const int64_t row0 = a + c * BT;
      const int64_t R = e - row0 < BT ? e - row0 : BT;
      const int64_t ci = base + c;
      __syncthreads();  // dS complete (its init or the last update); staging buffers free
      if (ci < dh_chunks) {
        const int64_t at = (ci * HV + hv) * K * V;
        for (int64_t x = tid; x < K * BV; x += kThreads) {
          const int64_t i = x >> bv_log, v = x & (BV - 1);
          if (v < bv) store<S>(p.dh, p.dh_dtype, at + i * V + v0 + v, ds[x]);
        }
      }
      if (tid < R) gs[tid] = p.g ? load<S>(p.g, p.g_dtype, (row0 + tid) * HV + hv) : S(0);
      __syncthreads();
      const S gL = gs[R - 1];
      // Step 2: dv2. Thread (tx, ty) owns the pairs (t = ty + j·rows_pass, v = tx).
      S acc[kPerThread];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int64_t t = ty + static_cast<int64_t>(j) * rows_pass;
        acc[j] = S(0);
        if (t < BT) {
          S dov = S(0);
          if (t < R && tx < bv) {
            const int64_t at = ((row0 + t) * HV + hv) * V + v0 + tx;
            acc[j] = load<S>(p.dv, p.dv_dtype, at);
            dov = load<S>(p.do_, p.do_dtype, at);
          }
          dos[t * BV + tx] = dov;
        }
      }
      for (int64_t i0 = 0; i0 < K; i0 += kKT) {
        const int64_t kt = K - i0 < kKT ? K - i0 : kKT;
        __syncthreads();
        for (int64_t x = tid; x < BT * kKT; x += kThreads) {
          const int64_t t = x / kKT, ii = x % kKT;
          kq[x] =
              t < R && ii < kt ? load<S>(p.k, p.k_dtype, ((row0 + t) * H + h) * K + i0 + ii) : S(0);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) {
          const int64_t t = ty + static_cast<int64_t>(j) * rows_pass;
          if (t < R) {
            const S f = p.g ? gate_exp<S>(gL - gs[t], p.gate_log2) : S(1);
            for (int64_t ii = 0; ii < kt; ++ii) {
              const S xk = f * kq[t * kKT + ii];
              acc[j] += xk * ds[(i0 + ii) * BV + tx];
            }
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int64_t t = ty + static_cast<int64_t>(j) * rows_pass;
        if (t < BT) {
          const bool real = t < R && tx < bv;
          if (real) store<S>(p.dv2, p.dv2_dtype, ((row0 + t) * HV + hv) * V + v0 + tx, acc[j]);
          d2s[t * BV + tx] = real ? acc[j] : S(0);
        }
      }
      // Step 3: the dS update, K tile by K tile. With gk first the decay pass: row i of dS times
      // exp(G_L)·exp(Gk_L[i]) (gk's row L at hv; the first factor 1 without g), as the CPU path
      // forms it; the update below then adds the chunk's terms only.
      const S decay = p.g ? gate_exp<S>(gL, p.gate_log2) : S(1);
      if (p.gk) {
        __syncthreads();  // step 2 is done reading ds
        const int64_t gk_last = ((row0 + R - 1) * HV + hv) * K;
        for (int64_t x = tid; x < K * BV; x += kThreads)
          ds[x] *=
              decay * gate_exp<S>(load<S>(p.gk, p.gk_dtype, gk_last + (x >> bv_log)), p.gate_log2);
      }
      for (int64_t i0 = 0; i0 < K; i0 += kKT) {
        const int64_t kt = K - i0 < kKT ? K - i0 : kKT;
        __syncthreads();  // step 2 (or the previous tile) is done with ds, kq, ws, d2s
        for (int64_t x = tid; x < BT * kKT; x += kThreads) {
          const int64_t t = x / kKT, ii = x % kKT;
          S qv = S(0), wv = S(0);
          if (t < R && ii < kt) {
            const S ef = p.g ? scale * gate_exp<S>(gs[t], p.gate_log2) : scale;
            qv = load<S>(p.q, p.q_dtype, ((row0 + t) * H + h) * K + i0 + ii) * ef;
            wv = load<S>(p.w, p.w_dtype, ((row0 + t) * HV + hv) * K + i0 + ii);
          }
          kq[x] = qv;
          ws[x] = wv;
        }
        __syncthreads();
        for (int64_t x = tid; x < kt * BV; x += kThreads) {
          const int64_t ii = x >> bv_log, v = x & (BV - 1);
          S val = ds[(i0 + ii) * BV + v];
          if (p.g && !p.gk) val *= decay;  // with gk the decay pass applied it
          for (int64_t t = 0; t < R; ++t)
            val += kq[t * kKT + ii] * dos[t * BV + v] - ws[t * kKT + ii] * d2s[t * BV + v];
          ds[(i0 + ii) * BV + v] = val;
        }
      }
    }
    if (p.dh0) {
      __syncthreads();
      float* d0 = static_cast<float*>(p.dh0);
      for (int64_t x = tid; x < K * BV; x += kThreads) {
        const int64_t i = x >> bv_log, v = x & (BV - 1);
        if (v < bv) d0[state + i * V + v0 + v] = static_cast<float>(ds[x]);
      }
    }
  }
}

// dh's chunks [total, B·NT) = 0, total = Σ_n ceil(len_n / BT) (offsets only; B = 1).
__global__ void __launch_bounds__(kThreads) spare_chunks_kernel(const Params p) {
  __shared__ int64_t red[kThreads / 32];
  const int64_t total = chunks_before(p, p.N, red);
  const int64_t per = p.HV * p.K * p.V;
  const int64_t end = p.B * p.NT * per;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t x = total * per + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       x < end; x += step)
    store<float>(p.dh, p.dh_dtype, x, 0.0f);
}

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
