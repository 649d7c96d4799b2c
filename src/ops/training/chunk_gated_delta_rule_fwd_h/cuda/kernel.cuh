// training/chunk_gated_delta_rule_fwd_h/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (sequence n, value head hv, V tile of BV columns), BV a power of two <= 32 chosen by
// the launcher so that the block's shared memory fits (tiles.h). A block of kThreads threads keeps
// the state slice S[:, tile] ([K, BV], accumulator A = fp32, fp64 for fp64 k) in shared memory
// across the sequence's chunks; thread (r, j) = (tid / BV, tid % BV) works on column j of the tile
// and on the rows r, r + RG, r + 2·RG, ... (RG = kThreads / BV) of whatever it walks. Per chunk (R
// rows, R <= BT), as the CPU path:
//   1. h[chunk] = S (rounded once to h's dtype; lanes along V, coalesced);
//   2. the gate factors f_t = exp(G_L − G_t) (exp2 with gate_log2) into shared memory, and the
//      decay exp(G_L) per thread (all in A);
//   3. v_t = u_t − Σ_i w_t[i]·S[i, :], the thread's rows in registers, the sum over i in order
//      (fma, starting from u), w staged [R, kKT] at a time; v_new = v rounded once to u's dtype
//      (unscaled); the gated rows f_t·v_t stay in A in shared memory;
//   4. S ← exp(G_L)·S, then with gk (KDA's per-channel gate) row i of S times exp(gk_L[i]) (gk at
//      the chunk's last row L and value head hv; the exponent as given, as the CPU path forms it;
//      k is used as given), then S[i, j] += k_t[i]·(f_t·v_t)[j] for t in order (fma), k staged
//      [R, kKT] at a time, each state element updated by the one thread that owns it.
// final_state = S after the last chunk (fp32). Nothing but S and the staging lives in shared
// memory; every sum runs over the actual sizes (tails of T, K and V are masked).
//
// Sequences: without seq_offsets sequence n is batch row n, its chunk c is h[n, c] (NT =
// ceil(T / BT)). With seq_offsets (B = 1) the block adds ceil(len_m / BT) over m < n itself (a
// block reduction over the offsets: no host read, graph friendly); a chunk whose number is NT or
// more (num_chunks below the count: the entry refuses it unless device offsets go unvalidated) is
// not stored.
// Offsets are clamped to [0, T] before use, so unvalidated offsets never index outside the
// inputs. zero_tail_kernel zeroes h's chunks past the sequences' count.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/chunk_gated_delta_rule_fwd_h/cuda/tiles.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/params.h"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {

// x (float or double) rounded once to X: core::cuda's from_float / from_double.
template <class X, class A>
__device__ __forceinline__ X round_to(A x) {
  if constexpr (std::is_same_v<X, A>)
    return x;
  else if constexpr (std::is_same_v<A, double>)
    return core::cuda::from_double<X>(x);
  else if constexpr (std::is_same_v<X, double>)
    return static_cast<double>(x);  // exact
  else
    return core::cuda::from_float<X>(x);
}

// Element i of a floating tensor of dtype t, as A (the CPU path's read: exact, except fp64 -> fp32
// to nearest).
template <class A>
__device__ __forceinline__ A load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return round_to<A>(static_cast<const double*>(base)[i]);
    case DType::fp16:
      return static_cast<A>(core::cuda::to_float(static_cast<const __half*>(base)[i]));
    case DType::bf16:
      return static_cast<A>(core::cuda::to_float(static_cast<const __nv_bfloat16*>(base)[i]));
    default: return static_cast<A>(static_cast<const float*>(base)[i]);
  }
}

// Element i of a floating tensor of dtype t = x rounded once.
template <class A>
__device__ __forceinline__ void store_as(void* base, DType t, int64_t i, A x) {
  switch (t) {
    case DType::fp64: static_cast<double*>(base)[i] = round_to<double>(x); break;
    case DType::fp16: static_cast<__half*>(base)[i] = round_to<__half>(x); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(base)[i] = round_to<__nv_bfloat16>(x); break;
    default: static_cast<float*>(base)[i] = round_to<float>(x); break;
  }
}

template <class A>
__device__ __forceinline__ A fma_a(A a, A b, A c) {
  if constexpr (std::is_same_v<A, double>)
    return fma(a, b, c);
  else
    return fmaf(a, b, c);
}

// exp(x), or exp2(x) with gate_log2: the accurate library functions, as the CPU path's std::exp.
template <class A>
__device__ __forceinline__ A gate_pow(A x, bool log2) {
  if constexpr (std::is_same_v<A, double>)
    return log2 ? exp2(x) : exp(x);
  else
    return log2 ? exp2f(x) : expf(x);
}

__device__ __forceinline__ int64_t offset_at(const Params& p, int64_t n) {
  return training_dev::gdn_offset(p.seq_offsets, p.off_dtype, n, p.T);  // clamped to [0, T]
}

// Σ_{m < n} ceil(len_m / BT) over the packed sequences (the chunks before sequence n), summed by
// the whole block (every thread must call it; all get the result). red: kThreads / 32 slots.
__device__ __forceinline__ int64_t chunks_before(const Params& p, int64_t n, long long* red) {
  long long s = 0;
  for (int64_t m = threadIdx.x; m < n; m += blockDim.x) {
    const int64_t a = offset_at(p, m), e = offset_at(p, m + 1);
    const int64_t len = e > a ? e - a : 0;
    s += len / p.BT + (len % p.BT != 0);
  }
  for (int d = 16; d > 0; d >>= 1) s += __shfl_down_sync(0xffffffffu, s, d);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) red[warp] = s;
  __syncthreads();
  long long total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x >> 5); ++w) total += red[w];
  __syncthreads();  // red is free again
  return total;
}

// The chunk's rows of x (w [.., heads = HV, K] or k [.., heads = H, K]) at head `head`, columns
// [i0, i0 + kt) of K, into tile [R, kLd] (coalesced along K), then a barrier. Returns kt =
// min(kKT, K − i0).
template <class A>
__device__ __forceinline__ int stage(A* tile, const void* x, DType dt, int64_t row0, int64_t R,
                                     int64_t heads, int64_t head, int64_t K, int64_t i0) {
  const int kt = static_cast<int>(K - i0 < kKT ? K - i0 : kKT);
  for (int64_t e = threadIdx.x; e < R * kKT; e += kThreads) {
    const int64_t t = e / kKT;
    const int ii = static_cast<int>(e % kKT);
    if (ii < kt) tile[t * kLd + ii] = load_as<A>(x, dt, ((row0 + t) * heads + head) * K + i0 + ii);
  }
  __syncthreads();
  return kt;
}

// bv: the V tile (a power of two <= kMaxBV dividing kThreads); vtiles = ceil(V / bv); items =
// N · HV · vtiles; dynamic shared memory: smem_elems(K, bv, BT) elements of A; blockDim.x =
// kThreads.
template <class A>
__global__ void __launch_bounds__(kThreads)
    fwd_h_kernel(const Params p, int bv, int64_t vtiles, int64_t items) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  __shared__ long long red[kThreads / 32];
  const int64_t K = p.K, V = p.V, HV = p.HV, BT = p.BT, group = p.HV / p.H;
  A* S = reinterpret_cast<A*>(smem_raw);  // [K, bv]
  A* tile = S + K * bv;                   // [BT, kLd]: w or k, kKT columns of K
  A* x = tile + BT * kLd;                 // [BT, bv]: the gated v rows
  A* gf = x + BT * bv;                    // [BT]: exp(G_L − G_t)
  const int tid = static_cast<int>(threadIdx.x);
  const int j = tid % bv, r = tid / bv, rg = kThreads / bv;
  const int64_t state = K * bv;
  const int64_t h_chunks = p.B * p.NT;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const int64_t vt = item % vtiles, nh = item / vtiles;
    const int64_t hv = nh % HV, n = nh / HV, kh = hv / group;
    const int64_t j0 = vt * bv, col = j0 + j;
    const bool col_ok = col < V;
    int64_t row_base, len, chunk0;
    if (p.seq_offsets) {
      const int64_t a = offset_at(p, n), e = offset_at(p, n + 1);
      row_base = a;
      len = e > a ? e - a : 0;
      chunk0 = chunks_before(p, n, red);
    } else {
      row_base = n * p.T;
      len = p.T;
      chunk0 = n * p.NT;
    }
    for (int64_t e = tid; e < state; e += kThreads) {
      const int64_t i = e / bv, c = j0 + e % bv;
      S[e] = p.h0 && c < V ? load_as<A>(p.h0, p.h0_dtype, ((n * HV + hv) * K + i) * V + c) : A(0);
    }
    int64_t hc = chunk0;
    for (int64_t c0 = 0; c0 < len; c0 += BT, ++hc) {
      __syncthreads();  // S complete; tile, x and gf free
      const int64_t row0 = row_base + c0;
      const int64_t R = len - c0 < BT ? len - c0 : BT;
      // 1. h[chunk] = S
      if (hc < h_chunks)
        for (int64_t e = tid; e < state; e += kThreads) {
          const int64_t i = e / bv, c = j0 + e % bv;
          if (c < V) store_as<A>(p.h, p.h_dtype, ((hc * HV + hv) * K + i) * V + c, S[e]);
        }
      // 2. gate factors
      A decay = A(1);
      if (p.g) {
        const A gl = load_as<A>(p.g, p.g_dtype, (row0 + R - 1) * HV + hv);
        decay = gate_pow<A>(gl, p.gate_log2);
        if (tid < R)
          gf[tid] =
              gate_pow<A>(gl - load_as<A>(p.g, p.g_dtype, (row0 + tid) * HV + hv), p.gate_log2);
      }
      __syncthreads();  // gf visible (also when K = 0 and no staging sync follows)
      // 3. v = u − w·S on the thread's rows t = r + m·rg
      A acc[kRowsPerThread];
#pragma unroll
      for (int m = 0; m < kRowsPerThread; ++m) {
        const int64_t t = r + static_cast<int64_t>(m) * rg;
        acc[m] =
            t < R && col_ok ? load_as<A>(p.u, p.u_dtype, ((row0 + t) * HV + hv) * V + col) : A(0);
      }
      for (int64_t i0 = 0; i0 < K; i0 += kKT) {
        const int kt = stage<A>(tile, p.w, p.w_dtype, row0, R, HV, hv, K, i0);
        for (int ii = 0; ii < kt; ++ii) {
          const A s = S[(i0 + ii) * bv + j];
#pragma unroll
          for (int m = 0; m < kRowsPerThread; ++m) {
            const int64_t t = r + static_cast<int64_t>(m) * rg;
            if (t < R) acc[m] = fma_a<A>(-tile[t * kLd + ii], s, acc[m]);
          }
        }
        __syncthreads();  // tile free
      }
#pragma unroll
      for (int m = 0; m < kRowsPerThread; ++m) {
        const int64_t t = r + static_cast<int64_t>(m) * rg;
        if (t < R) {
          if (col_ok) store_as<A>(p.v_new, p.u_dtype, ((row0 + t) * HV + hv) * V + col, acc[m]);
          x[t * bv + j] = p.g ? acc[m] * gf[t] : acc[m];
        }
      }
      // 4. S ← decay·S (then row i times exp(gk_L[i]) with gk) + Σ_t k_t ⊗ x_t (the staging sync
      // below also publishes x)
      const int64_t gk_last = ((row0 + R - 1) * HV + hv) * K;  // gk's row L at hv
      for (int64_t i0 = 0; i0 < K; i0 += kKT) {
        const int kt = stage<A>(tile, p.k, p.k_dtype, row0, R, p.H, kh, K, i0);
        for (int ii = r; ii < kt; ii += rg) {
          A s = S[(i0 + ii) * bv + j];
          if (p.g) s *= decay;
          if (p.gk) s *= gate_pow<A>(load_as<A>(p.gk, p.gk_dtype, gk_last + i0 + ii), p.gate_log2);
          for (int64_t t = 0; t < R; ++t) s = fma_a<A>(tile[t * kLd + ii], x[t * bv + j], s);
          S[(i0 + ii) * bv + j] = s;
        }
        __syncthreads();  // tile free
      }
    }
    __syncthreads();  // the last update (or the initial state) complete
    if (p.ht)
      for (int64_t e = tid; e < state; e += kThreads) {
        const int64_t i = e / bv, c = j0 + e % bv;
        if (c < V) store_as<A>(p.ht, DType::fp32, ((n * HV + hv) * K + i) * V + c, S[e]);
      }
    __syncthreads();  // S read before the next item overwrites it
  }
}

// h's chunks past the sequences' (seq_offsets only): elements [count · hkv, NT · hkv) = 0, hkv =
// HV · K · V; every block forms the count itself (no host read).
__global__ void __launch_bounds__(kThreads) zero_tail_kernel(const Params p, int64_t hkv) {
  __shared__ long long red[kThreads / 32];
  const int64_t used = chunks_before(p, p.N, red);
  if (used >= p.NT) return;
  const int64_t end = p.NT * hkv;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = used * hkv + static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       e < end; e += stride)
    store_as<float>(p.h, p.h_dtype, e, 0.0f);
}

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
