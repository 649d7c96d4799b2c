// training/common/cuda/mhc_mix.cuh: the CUDA building blocks the mHC mixing ops share
// (mhc_post, mhc_pre_bmm; include from .cu files only). Two kernels, both with fp64 arithmetic for
// every dtype, as the ops' CPU paths (their READMEs: fp32 sums of the signed streams failed the
// single standard's per-element bound), and one rounding of each output:
//
// - mix:  out_o[c] = a_o·v[c] + Σ_i M(i, o)·S_i[c] for every token, channel c and output o: the
//   elementwise outputs (mhc_post's out, dX, dy; mhc_pre_bmm's y, dX). The terms are added in
//   the CPU path's order (a_o·v first, then i ascending). A grid-stride loop over
//   (token, group of N channels); N = 16 / sizeof(wider of the two dtypes) when C and every
//   pointer allow aligned vector accesses, else 1. With n_in <= kMixRegs the N channels of the
//   inputs stay in registers for all outputs; otherwise they are re-read per output (L1 hits).
// - gram: G[a][b] = Σ_c A_a[c]·B_b[c] per token, over all channels: the weight gradients
//   (mhc_post's dcomb and dpost, mhc_pre_bmm's dh_pre). One block per token (grid-stride over
//   tokens); the (A, B) pairs in tiles of kGramA x kGramB (5 x 4) register accumulators, each
//   thread summing its strided channels, then a fixed warp-shuffle tree and the warps' sums added
//   in warp order: deterministic (the same bits on every run for a given block size), no atomics.
//
// Coefficients (M, a) are fp32 or fp64 (the ops' coef dtype), read widened to fp64.
// Indices are 64-bit throughout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda/launch.h"
#include "core/cuda/numeric.cuh"
#include "recops/status.h"

namespace recops::ops::training::mhc_cuda {

inline constexpr int kMixThreads = 256;
inline constexpr int64_t kMixMaxBlocks = 8192;  // grid-stride beyond this
inline constexpr int kMixRegs = 4;              // inputs kept in registers up to this many
inline constexpr int kGramThreads = 256;
inline constexpr int kGramWarps = kGramThreads / 32;
inline constexpr int64_t kGramMaxBlocks = 16384;  // tokens beyond this: grid-stride
inline constexpr int kGramA = 5;  // accumulator tile: kGramA x kGramB pairs (n = 4 streams + y)
inline constexpr int kGramB = 4;

// widen / narrow: core/cuda/numeric.cuh's exact widening to double and its single rounding from
// double to T (correctly rounded, as the CPU path's from_double).
template <class T>
__device__ __forceinline__ double widen(T v) {
  return core::cuda::to_double(v);
}
template <class T>
__device__ __forceinline__ T narrow(double v) {
  return core::cuda::from_double<T>(v);
}

// A per-token coefficient table: the value for (token t, input i, output o) sits at element
// t * tok + i * s_in + o * s_out of p (fp64 when f64, else fp32).
struct Coef {
  const void* p = nullptr;
  bool f64 = false;
  int64_t tok = 0;
  int64_t s_in = 0;
  int64_t s_out = 0;
};
__device__ __forceinline__ double coef(const Coef& k, int64_t t, int64_t i, int64_t o) {
  const int64_t off = t * k.tok + i * k.s_in + o * k.s_out;
  return k.f64 ? __ldg(static_cast<const double*>(k.p) + off)
               : static_cast<double>(__ldg(static_cast<const float*>(k.p) + off));
}

// out_o = a_o·v + Σ_i M(i, o)·S_i. Rows are C contiguous elements: input i of token t at
// S + t * s_tok + i * C, output o at out + t * out_tok + o * C, v at v + t * v_tok.
struct MixArgs {
  const void* S = nullptr;
  int64_t s_tok = 0;
  int64_t n_in = 0;
  const void* v = nullptr;  // nullptr: no a_o·v term
  int64_t v_tok = 0;
  Coef a;  // a_o = coef(a, t, 0, o)
  Coef M;
  void* out = nullptr;
  int64_t out_tok = 0;
  int64_t n_out = 0;
  int64_t tokens = 0;
  int64_t C = 0;
  bool vec = false;  // the launch found C and the pointers fit N-wide aligned accesses
};

template <class T, int N>
struct alignas(sizeof(T) * N) Pack {
  T v[N];
};
template <class T, int N>
__device__ __forceinline__ void load_n(const T* p, double* out) {
  const Pack<T, N> v = *reinterpret_cast<const Pack<T, N>*>(p);
#pragma unroll
  for (int k = 0; k < N; ++k) out[k] = widen(v.v[k]);
}
template <class T, int N>
__device__ __forceinline__ void store_n(T* p, const double* in) {
  Pack<T, N> v;
#pragma unroll
  for (int k = 0; k < N; ++k) v.v[k] = narrow<T>(in[k]);
  *reinterpret_cast<Pack<T, N>*>(p) = v;
}

// Channels c0 .. c0+N-1 of token t, every output.
template <class TS, class TO, int N>
__device__ __forceinline__ void mix_group(const MixArgs& a, int64_t t, int64_t c0) {
  const int64_t C = a.C;
  const TS* S = static_cast<const TS*>(a.S) + t * a.s_tok + c0;
  TO* out = static_cast<TO*>(a.out) + t * a.out_tok + c0;
  double vv[N];
  if (a.v != nullptr) load_n<TS, N>(static_cast<const TS*>(a.v) + t * a.v_tok + c0, vv);
  if (a.n_in <= kMixRegs) {
    double s[kMixRegs][N];
#pragma unroll
    for (int i = 0; i < kMixRegs; ++i) {
      if (i < a.n_in) {
        load_n<TS, N>(S + i * C, s[i]);
      } else {
#pragma unroll
        for (int k = 0; k < N; ++k) s[i][k] = 0.0;
      }
    }
    for (int64_t o = 0; o < a.n_out; ++o) {
      double acc[N];
      const double ao = a.v != nullptr ? coef(a.a, t, 0, o) : 0.0;
#pragma unroll
      for (int k = 0; k < N; ++k) acc[k] = a.v != nullptr ? ao * vv[k] : 0.0;
#pragma unroll
      for (int i = 0; i < kMixRegs; ++i) {
        if (i < a.n_in) {
          const double w = coef(a.M, t, i, o);
#pragma unroll
          for (int k = 0; k < N; ++k) acc[k] += w * s[i][k];
        }
      }
      store_n<TO, N>(out + o * C, acc);
    }
    return;
  }
  for (int64_t o = 0; o < a.n_out; ++o) {
    double acc[N];
    const double ao = a.v != nullptr ? coef(a.a, t, 0, o) : 0.0;
#pragma unroll
    for (int k = 0; k < N; ++k) acc[k] = a.v != nullptr ? ao * vv[k] : 0.0;
    for (int64_t i = 0; i < a.n_in; ++i) {
      const double w = coef(a.M, t, i, o);
      double x[N];
      load_n<TS, N>(S + i * C, x);
#pragma unroll
      for (int k = 0; k < N; ++k) acc[k] += w * x[k];
    }
    store_n<TO, N>(out + o * C, acc);
  }
}

template <class TS, class TO, int N>
__device__ __forceinline__ void mix_loop(const MixArgs& a) {
  const int64_t per = a.C / N;  // the launch guarantees N divides C
  const int64_t total = a.tokens * per;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; q < total;
       q += stride) {
    const int64_t t = q / per;
    mix_group<TS, TO, N>(a, t, (q - t * per) * N);
  }
}

template <class TS, class TO>
constexpr int kMixVec = static_cast<int>(16 / (sizeof(TS) > sizeof(TO) ? sizeof(TS) : sizeof(TO)));

template <class TS, class TO>
__global__ void __launch_bounds__(kMixThreads) mhc_mix_kernel(MixArgs a) {
  if (a.vec)
    mix_loop<TS, TO, kMixVec<TS, TO>>(a);
  else
    mix_loop<TS, TO, 1>(a);
}

inline bool mhc_aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Launches mix; nothing to do (no tokens, channels or outputs) launches nothing.
template <class TS, class TO>
Status launch_mix(const char* op, MixArgs a, void* stream) {
  if (a.tokens <= 0 || a.C <= 0 || a.n_out <= 0) return Status::Ok();
  constexpr int V = kMixVec<TS, TO>;
  a.vec = a.C % V == 0 && mhc_aligned(a.S, V * sizeof(TS)) && mhc_aligned(a.out, V * sizeof(TO)) &&
          (a.v == nullptr || mhc_aligned(a.v, V * sizeof(TS)));
  const int64_t groups = a.tokens * (a.C / (a.vec ? V : 1));
  const int64_t blocks = std::min<int64_t>((groups + kMixThreads - 1) / kMixThreads, kMixMaxBlocks);
  return RECOPS_LAUNCH_KERNEL(op, (mhc_mix_kernel<TS, TO>), dim3(static_cast<unsigned>(blocks)),
                              dim3(kMixThreads), 0, stream, a);
}

// G[a][b] = Σ_c A_a[c]·B_b[c] per token. A's rows: n_a rows at A + t * a_tok + r * C, then (when
// A2 is set) one more row at A2 + t * a2_tok. B's rows: n_b rows at B + t * b_tok + r * C.
// G for a < n_a at G + t * g_tok + a * g_sa + b * g_sb; the A2 row's at G2 + t * g2_tok + b * g2_sb
// (fp64 when g_f64, else fp32).
struct GramArgs {
  const void* A = nullptr;
  int64_t a_tok = 0;
  int64_t n_a = 0;
  const void* A2 = nullptr;
  int64_t a2_tok = 0;
  const void* B = nullptr;
  int64_t b_tok = 0;
  int64_t n_b = 0;
  void* G = nullptr;
  int64_t g_tok = 0;
  int64_t g_sa = 0;
  int64_t g_sb = 0;
  void* G2 = nullptr;
  int64_t g2_tok = 0;
  int64_t g2_sb = 0;
  bool g_f64 = false;
  int64_t tokens = 0;
  int64_t C = 0;
};

__device__ __forceinline__ void gram_store(const GramArgs& g, int64_t t, int64_t a, int64_t b,
                                           double v) {
  int64_t off;
  void* base;
  if (a < g.n_a) {
    base = g.G;
    off = t * g.g_tok + a * g.g_sa + b * g.g_sb;
  } else {
    base = g.G2;
    off = t * g.g2_tok + b * g.g2_sb;
  }
  if (g.g_f64)
    static_cast<double*>(base)[off] = v;
  else
    static_cast<float*>(base)[off] = __double2float_rn(v);
}

template <class TA, class TB>
__global__ void __launch_bounds__(kGramThreads) mhc_gram_kernel(GramArgs g) {
  __shared__ double part[kGramWarps][kGramA * kGramB];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t rows_a = g.n_a + (g.A2 != nullptr ? 1 : 0);
  const int64_t C = g.C;
  for (int64_t t = blockIdx.x; t < g.tokens; t += gridDim.x) {
    for (int64_t a0 = 0; a0 < rows_a; a0 += kGramA) {
      for (int64_t b0 = 0; b0 < g.n_b; b0 += kGramB) {
        const TA* ap[kGramA];
        const TB* bp[kGramB];
#pragma unroll
        for (int i = 0; i < kGramA; ++i) {
          const int64_t r = a0 + i;
          ap[i] = r < g.n_a    ? static_cast<const TA*>(g.A) + t * g.a_tok + r * C
                  : r < rows_a ? static_cast<const TA*>(g.A2) + t * g.a2_tok
                               : nullptr;
        }
#pragma unroll
        for (int j = 0; j < kGramB; ++j) {
          const int64_t r = b0 + j;
          bp[j] = r < g.n_b ? static_cast<const TB*>(g.B) + t * g.b_tok + r * C : nullptr;
        }
        double acc[kGramA][kGramB];
#pragma unroll
        for (int i = 0; i < kGramA; ++i)
#pragma unroll
          for (int j = 0; j < kGramB; ++j) acc[i][j] = 0.0;
        for (int64_t c = threadIdx.x; c < C; c += kGramThreads) {
          double av[kGramA], bv[kGramB];
#pragma unroll
          for (int i = 0; i < kGramA; ++i) av[i] = ap[i] != nullptr ? widen(ap[i][c]) : 0.0;
#pragma unroll
          for (int j = 0; j < kGramB; ++j) bv[j] = bp[j] != nullptr ? widen(bp[j][c]) : 0.0;
#pragma unroll
          for (int i = 0; i < kGramA; ++i)
#pragma unroll
            for (int j = 0; j < kGramB; ++j) acc[i][j] += av[i] * bv[j];
        }
        // Fixed-order reduction: a shuffle tree in each warp, then the warps in order.
#pragma unroll
        for (int i = 0; i < kGramA; ++i)
#pragma unroll
          for (int j = 0; j < kGramB; ++j) {
            double v = acc[i][j];
#pragma unroll
            for (int off = 16; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
            if (lane == 0) part[warp][i * kGramB + j] = v;
          }
        __syncthreads();
        if (threadIdx.x < kGramA * kGramB) {
          const int i = threadIdx.x / kGramB, j = threadIdx.x % kGramB;
          if (a0 + i < rows_a && b0 + j < g.n_b) {
            double s = 0.0;
#pragma unroll
            for (int w = 0; w < kGramWarps; ++w) s += part[w][threadIdx.x];
            gram_store(g, t, a0 + i, b0 + j, s);
          }
        }
        __syncthreads();  // part is rewritten by the next tile
      }
    }
  }
}

// Launches gram; no tokens or no pairs launches nothing. C = 0 writes zeros (empty sums).
template <class TA, class TB>
Status launch_gram(const char* op, const GramArgs& g, void* stream) {
  const int64_t rows_a = g.n_a + (g.A2 != nullptr ? 1 : 0);
  if (g.tokens <= 0 || rows_a <= 0 || g.n_b <= 0) return Status::Ok();
  const int64_t blocks = std::min<int64_t>(g.tokens, kGramMaxBlocks);
  return RECOPS_LAUNCH_KERNEL(op, (mhc_gram_kernel<TA, TB>), dim3(static_cast<unsigned>(blocks)),
                              dim3(kGramThreads), 0, stream, g);
}

}  // namespace recops::ops::training::mhc_cuda
