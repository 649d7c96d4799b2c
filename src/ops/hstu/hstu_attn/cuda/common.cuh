// hstu_attn/cuda/common.cuh: what the CUDA kernels of hstu_attn share across architectures: the
// general kernels (fwd.cuh, bwd.cuh), the register-resident ones (fwd_fa.cuh, bwd_fa.cuh, sm_80)
// and the Hopper ones (fwd_sm90.cuh, bwd_sm90.cuh, sm_90a). An architecture's header includes
// this one and core/cuda/*, never another architecture's header.
//
// - Sequence geometry read on the device (offsets, pages, contexts, targets), clamped into the
//   tensors' extents so that unvalidated data never addresses memory outside them.
// - The mask of spec §3: an element test (rules 1-5, custom mask, func) and, per query row, its
//   valid keys as intervals (the CPU kernel's row_intervals) for tile skipping; for the interval
//   masks alone (cuda_sm80_fa, cuda_sm90), at most two int intervals per row (RowIv) and the
//   CTA's key span.
// - Key addressing with the paged cache (keys 0 .. cached-1 from pages, then the new tokens).
// - One warp-level product, C[16 x 8n] += A[16 x K] * B[K x 8n], with A stored [row][k] and B
//   stored transposed [n][k] in shared memory (k contiguous in both): for fp16/bf16 it is
//   mma.sync m16n8k16 with fp32 accumulation; for fp32 it is the same fragment layout computed
//   with fp32 FMAs on the CUDA cores (the documented fp32 path: exact fp32 products, no tf32).
// - A tile loader global -> shared (row-major and/or transposed copy, zero padding).
// - Host-side 16-byte row tests (the accept tests of cuda_sm80_fa and cuda_sm90).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "core/cuda/mma.cuh"
#include "ops/hstu/hstu_attn/params.h"

namespace recops::ops::hstu_cuda {

using P = HstuAttnParams;

// ---- element types -------------------------------------------------------------------------

template <class T>
struct Elem;
template <>
struct Elem<__nv_bfloat16> {
  static constexpr bool kMma = true;
  static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16(x); }
};
template <>
struct Elem<__half> {
  static constexpr bool kMma = true;
  static __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
  static __device__ __forceinline__ __half from_f(float x) { return __float2half(x); }
};
template <>
struct Elem<float> {
  static constexpr bool kMma = false;
  static __device__ __forceinline__ float to_f(float x) { return x; }
  static __device__ __forceinline__ float from_f(float x) { return x; }
};

// ---- small helpers ---------------------------------------------------------------------------

__device__ __forceinline__ int64_t ld_index(const void* p, bool is64, int64_t stride, int64_t i) {
  return is64 ? static_cast<int64_t>(__ldg(static_cast<const long long*>(p) + i * stride))
              : static_cast<int64_t>(__ldg(static_cast<const int*>(p) + i * stride));
}
__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}
__device__ __forceinline__ int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}
__device__ __forceinline__ int64_t max64(int64_t a, int64_t b) {
  return a > b ? a : b;
}

// Reads element `off` of a tensor of dtype `t` (rab, custom mask) as float.
__device__ __forceinline__ float load_any(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::boolean: return static_cast<const uint8_t*>(base)[off] != 0 ? 1.f : 0.f;
    case DType::fp16: return __half2float(static_cast<const __half*>(base)[off]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[off]);
    default: return static_cast<const float*>(base)[off];
  }
}

__device__ __forceinline__ float sigmoidf_fast(float x) {
  return 1.f / (1.f + __expf(-x));
}

// ---- one sequence ----------------------------------------------------------------------------

struct Seq {
  int64_t q0;      // first q token of the sequence (0 for dense)
  int64_t k0;      // first new k/v token (0 for dense)
  int64_t Lq, Lk;  // lengths (Lk = cached + new)
  int64_t cached;  // keys from the paged cache
  int64_t page0;   // first entry of page_ids
  int64_t C, T;    // contexts, targets (clamped into [0, Lk])
};

__device__ __forceinline__ Seq load_seq(const P& p, int64_t b) {
  Seq s;
  int64_t lk_new;
  if (p.jagged) {
    s.q0 = clamp64(ld_index(p.offsets_q, p.offsets_q_int64, p.offsets_q_stride, b), 0, p.total_q);
    const int64_t q1 = clamp64(ld_index(p.offsets_q, p.offsets_q_int64, p.offsets_q_stride, b + 1),
                               s.q0, p.total_q);
    s.Lq = min64(q1 - s.q0, p.Sq);
    s.k0 = clamp64(ld_index(p.offsets_k, p.offsets_k_int64, p.offsets_k_stride, b), 0, p.total_k);
    const int64_t k1 = clamp64(ld_index(p.offsets_k, p.offsets_k_int64, p.offsets_k_stride, b + 1),
                               s.k0, p.total_k);
    lk_new = k1 - s.k0;
  } else {
    s.q0 = 0;
    s.k0 = 0;
    s.Lq = p.Sq;
    lk_new = p.Sk;
  }
  s.cached = 0;
  s.page0 = 0;
  if (p.kv_cache) {
    const int64_t a =
        clamp64(ld_index(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b), 0,
                p.num_page_ids);
    const int64_t e =
        clamp64(ld_index(p.page_offsets, p.page_offsets_int64, p.page_offsets_stride, b + 1), a,
                p.num_page_ids);
    if (e > a) {
      const int64_t last =
          clamp64(ld_index(p.last_page_len, p.last_page_len_int64, p.last_page_len_stride, b), 1,
                  p.page_size);
      s.cached = (e - a - 1) * p.page_size + last;
    }
    s.page0 = a;
  }
  s.Lk = min64(s.cached + lk_new, p.Sk);
  s.C = p.num_contexts
            ? clamp64(ld_index(p.num_contexts, p.contexts_int64, p.contexts_stride, b), 0, s.Lk)
            : 0;
  s.T = p.num_targets
            ? clamp64(ld_index(p.num_targets, p.targets_int64, p.targets_stride, b), 0, s.Lk)
            : 0;
  return s;
}

// Global token index of query row i (the last dim of func and attn_scale).
__device__ __forceinline__ int64_t q_token(const P& p, const Seq& s, int64_t b, int64_t i) {
  return p.jagged ? s.q0 + i : b * p.Sq + i;
}

// The output normaliser of query row i.
__device__ __forceinline__ float row_scale(const P& p, const Seq& s, int64_t b, int64_t i) {
  return p.attn_scale ? p.attn_scale[q_token(p, s, b, i) * p.attn_scale_stride]
                      : static_cast<float>(p.silu_scale);
}

__device__ __forceinline__ int64_t func_at(const P& p, int64_t hq, int64_t tok, int64_t j) {
  const int64_t hf = p.func_s[0] == 0 ? 0 : hq;
  return p.func[hf * p.func_s[0] + j * p.func_s[1] + tok * p.func_s[2]];
}

// ---- the mask (spec §3) ----------------------------------------------------------------------

// Element test, in the spec's order, for query row i and key c of sequence b, query head hq.
__device__ __forceinline__ bool elem_valid(const P& p, const Seq& s, int64_t b, int64_t hq,
                                           int64_t i, int64_t c) {
  if (i >= s.Lq || c >= s.Lk) return false;  // rule 1 (and rows past the sequence)
  if (p.mask) {                              // rule 2: custom mask tensor
    const int64_t hm = p.mask_s[1] == 0 ? 0 : hq;
    return load_any(p.mask, p.mask_dtype,
                    b * p.mask_s[0] + hm * p.mask_s[1] + i * p.mask_s[2] + c * p.mask_s[3]) != 0.f;
  }
  if (p.func) {  // rule 2: keep c in [0, F0) ∪ [F1, F2) ∪ ...
    const int64_t tok = q_token(p, s, b, i);
    if (c < func_at(p, hq, tok, 0)) return true;
    for (int64_t j = 1; j + 1 < p.nfunc; j += 2)
      if (func_at(p, hq, tok, j) <= c && c < func_at(p, hq, tok, j + 1)) return true;
    return false;
  }
  const int64_t r = i + (s.Lk - s.Lq), h = s.Lk - s.T;
  if (s.C > 0 && r < s.C) return c < h;                             // rule 3
  if (p.window_right >= 0 && c > r + p.window_right) return false;  // rule 4
  if (p.window_left >= 0 && c < r - p.window_left) return false;
  if (s.T > 0 && r >= h && c >= h) {  // rule 5
    const int64_t g = (r - h) / p.group_size;
    if (c < h + g * p.group_size) return false;
  }
  return true;
}

// How query row i relates to the keys [lo, hi) (hi <= Lk): `meets` when some key of the range
// is valid, `covers` when every key is (then the element test can be skipped). Rows past the
// sequence neither meet nor constrain (covers = true). Mirrors cpu/fwd_kernel.h row_intervals.
struct RowRange {
  bool meets, covers;
};
__device__ __forceinline__ RowRange row_vs_keys(const P& p, const Seq& s, int64_t b, int64_t hq,
                                                int64_t i, int64_t lo, int64_t hi) {
  RowRange rr{false, true};
  if (i >= s.Lq || lo >= hi) return rr;
  rr.covers = false;
  auto add = [&](int64_t a, int64_t e) {  // one valid interval [a, e)
    a = max64(a, 0);
    e = min64(e, s.Lk);
    if (a >= e) return;
    if (a < hi && e > lo) rr.meets = true;
    if (a <= lo && e >= hi) rr.covers = true;
  };
  if (p.mask) {
    rr.meets = true;  // the element test decides
    return rr;
  }
  if (p.func) {
    const int64_t tok = q_token(p, s, b, i);
    add(0, func_at(p, hq, tok, 0));
    for (int64_t j = 1; j + 1 < p.nfunc; j += 2)
      add(func_at(p, hq, tok, j), func_at(p, hq, tok, j + 1));
    return rr;
  }
  const int64_t r = i + (s.Lk - s.Lq), h = s.Lk - s.T;
  if (s.C > 0 && r < s.C) {
    add(0, h);
    return rr;
  }
  const int64_t wlo = p.window_left >= 0 ? r - p.window_left : 0;
  const int64_t whi = p.window_right >= 0 ? r + p.window_right + 1 : s.Lk;
  if (s.T > 0 && r >= h) {
    const int64_t t0 = h + (r - h) / p.group_size * p.group_size;
    add(wlo, min64(whi, h));
    add(max64(wlo, t0), whi);
  } else {
    add(wlo, whi);
  }
  return rr;
}

// The smallest and one past the largest valid key of row i (lo >= hi: none).
__device__ __forceinline__ void row_span(const P& p, const Seq& s, int64_t b, int64_t hq, int64_t i,
                                         int64_t* lo, int64_t* hi) {
  *lo = s.Lk;
  *hi = 0;
  if (i >= s.Lq) return;
  auto add = [&](int64_t a, int64_t e) {
    a = max64(a, 0);
    e = min64(e, s.Lk);
    if (a >= e) return;
    *lo = min64(*lo, a);
    *hi = max64(*hi, e);
  };
  if (p.mask) {
    add(0, s.Lk);
    return;
  }
  if (p.func) {
    const int64_t tok = q_token(p, s, b, i);
    add(0, func_at(p, hq, tok, 0));
    for (int64_t j = 1; j + 1 < p.nfunc; j += 2)
      add(func_at(p, hq, tok, j), func_at(p, hq, tok, j + 1));
    return;
  }
  const int64_t r = i + (s.Lk - s.Lq), h = s.Lk - s.T;
  if (s.C > 0 && r < s.C) {
    add(0, h);
    return;
  }
  const int64_t wlo = p.window_left >= 0 ? r - p.window_left : 0;
  const int64_t whi = p.window_right >= 0 ? r + p.window_right + 1 : s.Lk;
  if (s.T > 0 && r >= h) {
    const int64_t t0 = h + (r - h) / p.group_size * p.group_size;
    add(wlo, min64(whi, h));
    add(max64(wlo, t0), whi);
  } else {
    add(wlo, whi);
  }
}

// One row's valid keys as at most two intervals [lo0, hi0) ∪ [lo1, hi1) (spec §3 without a
// custom mask or func; clipped to [0, Lk); empty for rows past the sequence).
struct RowIv {
  int lo0, hi0, lo1, hi1;
};
__device__ __forceinline__ RowIv row_intervals(const P& p, const Seq& s, int64_t i) {
  RowIv v{0, 0, 0, 0};
  if (i >= s.Lq) return v;
  auto clip = [&](int64_t a, int64_t e, int& lo, int& hi) {
    a = max64(a, 0);
    e = min64(e, s.Lk);
    if (a < e) {
      lo = static_cast<int>(a);
      hi = static_cast<int>(e);
    }
  };
  const int64_t r = i + (s.Lk - s.Lq), h = s.Lk - s.T;
  if (s.C > 0 && r < s.C) {
    clip(0, h, v.lo0, v.hi0);
    return v;
  }
  const int64_t wlo = p.window_left >= 0 ? r - p.window_left : 0;
  const int64_t whi = p.window_right >= 0 ? r + p.window_right + 1 : s.Lk;
  if (s.T > 0 && r >= h) {
    const int64_t t0 = h + (r - h) / p.group_size * p.group_size;
    clip(wlo, min64(whi, h), v.lo0, v.hi0);
    clip(max64(wlo, t0), whi, v.lo1, v.hi1);
  } else {
    clip(wlo, whi, v.lo0, v.hi0);
  }
  return v;
}
__device__ __forceinline__ bool iv_has(const RowIv& v, int c) {
  return (c >= v.lo0 && c < v.hi0) || (c >= v.lo1 && c < v.hi1);
}
__device__ __forceinline__ bool iv_meets(const RowIv& v, int c0, int c1) {
  return (v.lo0 < v.hi0 && v.lo0 < c1 && v.hi0 > c0) || (v.lo1 < v.hi1 && v.lo1 < c1 && v.hi1 > c0);
}
__device__ __forceinline__ bool iv_covers(const RowIv& v, int c0, int c1) {
  return (v.lo0 <= c0 && v.hi0 >= c1) || (v.lo1 <= c0 && v.hi1 >= c1);
}
// Adds query row i's valid keys to a CTA's key span [*lo, *hi) in shared memory (set to INT_MAX
// and 0 first): the span is the union of the rows' intervals (the Hopper kernels' tile range).
__device__ __forceinline__ void span_add_row(const P& p, const Seq& s, int64_t i, int* lo_s,
                                             int* hi_s) {
  const RowIv v = row_intervals(p, s, i);
  int lo = INT_MAX, hi = 0;
  if (v.lo0 < v.hi0) {
    lo = v.lo0;
    hi = v.hi0;
  }
  if (v.lo1 < v.hi1) {
    lo = min(lo, v.lo1);
    hi = max(hi, v.hi1);
  }
  if (lo < hi) {
    atomicMin(lo_s, lo);
    atomicMax(hi_s, hi);
  }
}

// ---- addressing ------------------------------------------------------------------------------

// Row c of K (value = false) or V (value = true) of key head kh: the cache, then new tokens.
template <class T>
__device__ __forceinline__ const T* key_row(const P& p, const Seq& s, int64_t b, int64_t kh,
                                            int64_t c, bool value) {
  if (c < s.cached) {
    const int64_t id = clamp64(
        ld_index(p.page_ids, p.page_ids_int64, p.page_ids_stride, s.page0 + c / p.page_size), 0,
        p.num_pages - 1);
    return static_cast<const T*>(p.kv_cache) + id * p.kv_s[0] + (value ? p.kv_s[1] : 0) +
           (c % p.page_size) * p.kv_s[2] + kh * p.kv_s[3];
  }
  const int64_t t = s.k0 + (c - s.cached);
  return value ? static_cast<const T*>(p.v) + b * p.v_batch + t * p.v_row + kh * p.v_head
               : static_cast<const T*>(p.k) + b * p.k_batch + t * p.k_row + kh * p.k_head;
}

// ---- global -> shared tiles -----------------------------------------------------------------

// Copies rows r < nvalid (src = rowptr(r), ncols elements) into a [nrows][cpad] tile, zero
// padded (rows nvalid .. nrows-1 and columns ncols .. cpad-1). dst (row stride ld) and/or dstT
// (transposed, [cpad][nrows], row stride ldT) may be null. cpad is a multiple of 8; vec says
// that every source row is 16-byte aligned (8-element chunks may be loaded as vectors).
template <class T, class RowPtr>
__device__ __forceinline__ void load_tile(T* dst, int ld, T* dstT, int ldT, int nrows, int nvalid,
                                          int ncols, int cpad, bool vec, RowPtr rowptr) {
  const int chunks = cpad / 8;
  for (int idx = threadIdx.x; idx < nrows * chunks; idx += blockDim.x) {
    const int r = idx / chunks, x = (idx - r * chunks) * 8;
    alignas(16) T v[8];
    if (r < nvalid) {
      const T* src = rowptr(r);
      if (vec && x + 8 <= ncols) {
        const uint4* s4 = reinterpret_cast<const uint4*>(src + x);
        uint4* v4 = reinterpret_cast<uint4*>(v);
#pragma unroll
        for (int u = 0; u < static_cast<int>(8 * sizeof(T) / 16); ++u) v4[u] = __ldg(s4 + u);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) v[e] = x + e < ncols ? src[x + e] : Elem<T>::from_f(0.f);
      }
    } else {
#pragma unroll
      for (int e = 0; e < 8; ++e) v[e] = Elem<T>::from_f(0.f);
    }
    if (dst) {
      uint4* d4 = reinterpret_cast<uint4*>(dst + r * ld + x);
      const uint4* v4 = reinterpret_cast<const uint4*>(v);
#pragma unroll
      for (int u = 0; u < static_cast<int>(8 * sizeof(T) / 16); ++u) d4[u] = v4[u];
    }
    if (dstT) {
#pragma unroll
      for (int e = 0; e < 8; ++e) dstT[(x + e) * ldT + r] = v[e];
    }
  }
}

// ---- the warp-level product ------------------------------------------------------------------

// Accumulator element e of n-tile j sits at row g + 8 (e >> 1), column 8 j + 2 t + (e & 1) of
// the warp's 16-row strip, where g = lane / 4 and t = lane % 4 (the mma.sync C layout).

__device__ __forceinline__ uint32_t ld_pair(const void* p) {
  return *static_cast<const uint32_t*>(p);
}

using core::cuda::mma_16816;
using core::cuda::pack2;
using core::cuda::unpack2;

// acc[j] (j < nt <= 8) += A[16 x K] B[K x 8 nt]: A at row 0 of the strip (row stride lda), B
// stored transposed from its column 0 (Bt[n][k], row stride ldb); K a multiple of 16; lda, ldb
// even. Whole warp, converged.
template <class T>
__device__ __forceinline__ void warp_mma(float (&acc)[8][4], const T* A, int lda, const T* Bt,
                                         int ldb, int K, int nt) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  if constexpr (Elem<T>::kMma) {
    for (int k0 = 0; k0 < K; k0 += 16) {
      uint32_t a[4];
      a[0] = ld_pair(A + g * lda + k0 + 2 * t);
      a[1] = ld_pair(A + (g + 8) * lda + k0 + 2 * t);
      a[2] = ld_pair(A + g * lda + k0 + 8 + 2 * t);
      a[3] = ld_pair(A + (g + 8) * lda + k0 + 8 + 2 * t);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j < nt) {
          const T* b = Bt + (8 * j + g) * ldb + k0 + 2 * t;
          mma_16816<T>(acc[j], a, ld_pair(b), ld_pair(b + 8));
        }
      }
    }
  } else {  // fp32: the same C layout with FMAs
    const T* a0p = A + g * lda;
    const T* a1p = A + (g + 8) * lda;
    for (int k = 0; k < K; ++k) {
      const float a0 = a0p[k], a1 = a1p[k];
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (j < nt) {
          const float b0 = Bt[(8 * j + 2 * t) * ldb + k], b1 = Bt[(8 * j + 2 * t + 1) * ldb + k];
          acc[j][0] = fmaf(a0, b0, acc[j][0]);
          acc[j][1] = fmaf(a0, b1, acc[j][1]);
          acc[j][2] = fmaf(a1, b0, acc[j][2]);
          acc[j][3] = fmaf(a1, b1, acc[j][3]);
        }
      }
    }
  }
}

// acc strip <-> fp32 shared rows (row stride ld, columns n0 .. n0 + 8 nt).
__device__ __forceinline__ void acc_load(float (&acc)[8][4], const float* S, int ld, int nt) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (j < nt) {
      const float2 lo = *reinterpret_cast<const float2*>(S + g * ld + 8 * j + 2 * t);
      const float2 hi = *reinterpret_cast<const float2*>(S + (g + 8) * ld + 8 * j + 2 * t);
      acc[j][0] = lo.x;
      acc[j][1] = lo.y;
      acc[j][2] = hi.x;
      acc[j][3] = hi.y;
    }
  }
}
__device__ __forceinline__ void acc_store(const float (&acc)[8][4], float* S, int ld, int nt) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (j < nt) {
      *reinterpret_cast<float2*>(S + g * ld + 8 * j + 2 * t) = make_float2(acc[j][0], acc[j][1]);
      *reinterpret_cast<float2*>(S + (g + 8) * ld + 8 * j + 2 * t) =
          make_float2(acc[j][2], acc[j][3]);
    }
  }
}
__device__ __forceinline__ void acc_zero(float (&acc)[8][4]) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
}

// Stores two adjacent values (columns 2t, 2t+1 of a pair) into a T row.
template <class T>
__device__ __forceinline__ void store_pair(T* dst, float x0, float x1) {
  if constexpr (std::is_same_v<T, float>) {
    *reinterpret_cast<float2*>(dst) = make_float2(x0, x1);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    *reinterpret_cast<__nv_bfloat162*>(dst) = __floats2bfloat162_rn(x0, x1);
  } else {
    *reinterpret_cast<__half2*>(dst) = __floats2half2_rn(x0, x1);
  }
}

// C[rows][ncols] (+)= A B over a wide N, in 64-column chunks held in registers: the fp32
// accumulator strip lives in shared memory (acc, row stride ldc), A as in warp_mma, Bt rows are
// the N index. npad is a multiple of 8.
template <class T>
__device__ __forceinline__ void warp_mma_wide(float* C, int ldc, const T* A, int lda, const T* Bt,
                                              int ldb, int K, int npad) {
  for (int n0 = 0; n0 < npad; n0 += 64) {
    const int nt = min(8, (npad - n0) / 8);
    float acc[8][4];
    acc_zero(acc);
    acc_load(acc, C + n0, ldc, nt);
    warp_mma<T>(acc, A, lda, Bt + n0 * ldb, ldb, K, nt);
    acc_store(acc, C + n0, ldc, nt);
  }
}

// Shared-memory carve-up helper: 16-byte aligned offsets.
struct SmemPlan {
  size_t bytes = 0;
  size_t take(size_t n) {
    const size_t at = bytes;
    bytes += (n + 15) / 16 * 16;
    return at;
  }
};

inline int round_up(int64_t x, int m) {
  return static_cast<int>((x + m - 1) / m * m);
}

// ---- host-side row tests (the accept tests of cuda_sm80_fa and cuda_sm90) -------------------

// True when base and every stride (elements of es bytes) keep each row 16-byte aligned.
inline bool fa_rows_aligned16(const void* base, size_t es, std::initializer_list<int64_t> strides) {
  if (reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  for (int64_t st : strides)
    if ((static_cast<uint64_t>(st < 0 ? -st : st) * es) % 16 != 0) return false;
  return true;
}

// Whether every row of q, k, v, dout, dq, dk, dv starts 16-byte aligned (2-byte elements): the
// backward kernels' 16-byte copies and stores need it.
inline bool bwd_rows_aligned16(const P& p) {
  const size_t es = 2;
  return fa_rows_aligned16(p.q, es, {p.q_batch, p.q_row, p.q_head}) &&
         fa_rows_aligned16(p.k, es, {p.k_batch, p.k_row, p.k_head}) &&
         fa_rows_aligned16(p.v, es, {p.v_batch, p.v_row, p.v_head}) &&
         fa_rows_aligned16(p.dout, es, {p.do_batch, p.do_row, p.do_head}) &&
         fa_rows_aligned16(p.dq, es, {p.dq_batch, p.dq_row, p.dq_head}) &&
         fa_rows_aligned16(p.dk, es, {p.dk_batch, p.dk_row, p.dk_head}) &&
         fa_rows_aligned16(p.dv_out, es, {p.dv_batch, p.dv_row, p.dv_head});
}

}  // namespace recops::ops::hstu_cuda
