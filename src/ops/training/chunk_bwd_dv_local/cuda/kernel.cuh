// training/chunk_bwd_dv_local/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, value head hv), one block each (grid-stride); GVA key head
// h = hv / (HV / H). Per item, in S = fp32 (fp64 for fp64 do) as the CPU path:
//   1. A[j, i] = scale·(k_j·q_i)·exp(G_i − G_j) for i ≥ j in the chunk (0 elsewhere), the dots
//      accumulated K tile by K tile from q and k rows staged in shared memory (rows padded by one
//      element against bank conflicts), each thread owning up to 16 (j, i) entries;
//   2. per V tile of 32 columns: the chunk's do rows staged, then dv_j = Σ_{i ≥ j} A[j, i]·do_i
//      (i ascending, as the CPU), each thread owning (j, v) pairs, rounded once to dv's dtype.
// Only exponentials of the non-positive differences G_i − G_j (i ≥ j) are formed; for S = fp32
// exp/exp2 of the float widened to double, rounded to float.
//
// Chunk slots (sync-free, no host read of the offsets): without seq_offsets slot s is chunk
// s % ceil(T / BT) of batch row s / ceil(T / BT). With seq_offsets sequence n owns the slots
// [S(n), S(n+1)), S(n) = floor(off[n] / BT) + n, at least ceil(len_n / BT) of them; a slot past
// its sequence's chunks does nothing; the block finds its sequence by binary search. Offsets are
// clamped to [0, T] first, so unvalidated offsets never index outside the tensors.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "ops/training/chunk_bwd_dv_local/cuda/tiles.h"
#include "ops/training/chunk_bwd_dv_local/params.h"

namespace recops::ops::chunk_bwd_dv_local_ns {

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

// x into element i of dv (dtype t = do's; S = double only for fp64), rounded once.
template <class S>
__device__ __forceinline__ void store(void* base, DType t, int64_t i, S x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = static_cast<double>(x); break;
    case DType::fp32: static_cast<float*>(base)[i] = static_cast<float>(x); break;
    case DType::fp16: static_cast<__half*>(base)[i] = __float2half_rn(static_cast<float>(x)); break;
    case DType::bf16:
      static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(static_cast<float>(x));
      break;
    default: break;
  }
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

__device__ __forceinline__ int64_t offset_at(const Params& p, int64_t n) {
  const int64_t v = p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                                : static_cast<const int64_t*>(p.seq_offsets)[n];
  return v < 0 ? 0 : (v > p.T ? p.T : v);
}

// Slot `slot`'s chunk: *row0 its first row of the flattened [B·T] time axis, *rows its length
// (<= 0: an empty slot).
__device__ __forceinline__ void slot_chunk(const Params& p, int64_t slot, int64_t* row0,
                                           int64_t* rows) {
  const int64_t bt = p.BT;
  if (!p.seq_offsets) {
    const int64_t per_batch = (p.T + bt - 1) / bt;
    const int64_t b = slot / per_batch, c = slot % per_batch;
    *row0 = b * p.T + c * bt;
    *rows = p.T - c * bt < bt ? p.T - c * bt : bt;
    return;
  }
  int64_t lo = 0, hi = p.N - 1;  // the largest n with S(n) <= slot (0 if none)
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (offset_at(p, mid) / bt + mid <= slot)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int64_t a = offset_at(p, lo), e = offset_at(p, lo + 1);
  const int64_t c = slot - (a / bt + lo);
  const int64_t start = a + c * bt, left = e - start;
  *row0 = start;
  *rows = (c < 0 || left <= 0) ? 0 : (left < bt ? left : bt);
}

// Dynamic shared memory (S elements): qs, ks [BT·(KT+1)], As [BT·(BT+1)], dos [BT·BV], gs [BT].
template <class S>
__global__ void __launch_bounds__(kThreads) dv_local_kernel(const Params p, int64_t items) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  const int64_t BT = p.BT, K = p.K, V = p.V, H = p.H, HV = p.HV, group = HV / H;
  constexpr int kP = kKT + 1;  // padded row of qs and ks
  const int64_t ap = BT + 1;   // padded row of As
  S* qs = reinterpret_cast<S*>(smem_raw);
  S* ks = qs + BT * kP;
  S* As = ks + BT * kP;
  S* dos = As + BT * ap;
  S* gs = dos + BT * kBV;
  const int tid = static_cast<int>(threadIdx.x);
  const S scale = static_cast<S>(p.scale);
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t slot = item / HV, hv = item % HV, h = hv / group;
    int64_t row0, R;
    slot_chunk(p, slot, &row0, &R);  // the same for the whole block
    if (R <= 0) continue;
    __syncthreads();  // the previous item is done with shared memory
    if (tid < R) gs[tid] = p.g ? load<S>(p.g, p.g_dtype, (row0 + tid) * HV + hv) : S(0);
    S dot[kDotsPerThread];
#pragma unroll
    for (int m = 0; m < kDotsPerThread; ++m) dot[m] = S(0);
    for (int64_t i0 = 0; i0 < K; i0 += kKT) {
      const int64_t kt = K - i0 < kKT ? K - i0 : kKT;
      __syncthreads();
      for (int64_t x = tid; x < BT * kKT; x += kThreads) {
        const int64_t t = x / kKT, ii = x % kKT;
        const bool in = t < R && ii < kt;
        const int64_t at = ((row0 + t) * H + h) * K + i0 + ii;
        qs[t * kP + ii] = in ? load<S>(p.q, p.q_dtype, at) : S(0);
        ks[t * kP + ii] = in ? load<S>(p.k, p.k_dtype, at) : S(0);
      }
      __syncthreads();
#pragma unroll
      for (int m = 0; m < kDotsPerThread; ++m) {
        const int64_t e = tid + static_cast<int64_t>(m) * kThreads;
        const int64_t j = e / BT, i = e % BT;
        if (j < R && i >= j && i < R)
          for (int64_t ii = 0; ii < kt; ++ii) dot[m] += ks[j * kP + ii] * qs[i * kP + ii];
      }
    }
    __syncthreads();  // gs visible (also when K = 0)
#pragma unroll
    for (int m = 0; m < kDotsPerThread; ++m) {
      const int64_t e = tid + static_cast<int64_t>(m) * kThreads;
      const int64_t j = e / BT, i = e % BT;
      if (j < BT) {
        S a = S(0);
        if (j < R && i >= j && i < R) {
          a = scale * dot[m];
          if (p.g) a *= gate_exp<S>(gs[i] - gs[j], p.gate_log2);
        }
        As[j * ap + i] = a;
      }
    }
    for (int64_t v0 = 0; v0 < V; v0 += kBV) {
      const int64_t bv = V - v0 < kBV ? V - v0 : kBV;
      __syncthreads();  // As complete; the previous tile is done with dos
      for (int64_t x = tid; x < BT * kBV; x += kThreads) {
        const int64_t t = x / kBV, v = x % kBV;
        dos[x] = t < R && v < bv ? load<S>(p.dout, p.do_dtype, ((row0 + t) * HV + hv) * V + v0 + v)
                                 : S(0);
      }
      __syncthreads();
#pragma unroll
      for (int m = 0; m < kOutPerThread; ++m) {
        const int64_t e = tid + static_cast<int64_t>(m) * kThreads;
        const int64_t j = e / kBV, v = e % kBV;
        if (j < R && v < bv) {
          S acc = S(0);
          for (int64_t i = j; i < R; ++i) acc += As[j * ap + i] * dos[i * kBV + v];
          store<S>(p.dv, p.dv_dtype, ((row0 + j) * HV + hv) * V + v0 + v, acc);
        }
      }
    }
  }
}

}  // namespace recops::ops::chunk_bwd_dv_local_ns
