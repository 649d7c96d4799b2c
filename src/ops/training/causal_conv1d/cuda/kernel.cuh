// training/causal_conv1d/cuda/kernel.cuh: the device code of cuda_sm80 (reads only the params).
// Forward: one thread per (b, d, tile of kTile time steps), the tile's W−1 halo and inputs read
// once into registers. Backward: dx and dinitial_state per element (dz recomputed at the W
// positions it needs); dweight/dbias in two stages: per (chunk of kChunk tokens, channel) acc_t
// partials, then one thread per channel adds the chunks in order (no atomics).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/causal_conv1d/cuda/tiles.h"
#include "ops/training/causal_conv1d/params.h"

namespace recops::ops::causal_conv1d_ns {

template <class T, class Acc>
struct Dev {
  const Params& p;

  static __device__ Acc cv(T v) {
    if constexpr (std::is_same_v<T, double>)
      return v;
    else
      return core::cuda::to_float(v);
  }
  static __device__ T out(Acc v) {
    if constexpr (std::is_same_v<T, double>)
      return v;
    else
      return core::cuda::from_float<T>(v);
  }
  __device__ Acc st(const void* s, int64_t i) const {
    return p.state_dtype == DType::fp32 ? static_cast<Acc>(static_cast<const float*>(s)[i])
                                        : cv(static_cast<const T*>(s)[i]);
  }
  __device__ void st_put(void* s, int64_t i, Acc v) const {
    if (p.state_dtype == DType::fp32)
      static_cast<float*>(s)[i] = static_cast<float>(v);
    else
      static_cast<T*>(s)[i] = out(v);
  }
  __device__ Acc w(int64_t d, int64_t k) const {
    return cv(static_cast<const T*>(p.weight)[p.wd ? k * p.D + d : d * p.W + k]);
  }
  // offsets[i] clamped to [0, T]: with validation off, bad offsets give unspecified values but
  // no out-of-bounds access (lengths below are also clamped at 0).
  __device__ int64_t off(int64_t i) const {
    const int64_t v = p.off_dtype == DType::int64 ? static_cast<const int64_t*>(p.seq_offsets)[i]
                                                  : static_cast<const int32_t*>(p.seq_offsets)[i];
    return v < 0 ? 0 : (v > p.T ? p.T : v);
  }
  __device__ int64_t sid(int64_t b, int64_t t) const {
    const int64_t i = b * p.T + t;
    return p.idx_dtype == DType::int64 ? static_cast<const int64_t*>(p.seq_idx)[i]
                                       : static_cast<const int32_t*>(p.seq_idx)[i];
  }
  // The sequence n holding token (b, tg): its start and length.
  __device__ void seq_at(int64_t b, int64_t tg, int64_t* n, int64_t* start, int64_t* len) const {
    if (!p.seq_offsets) {
      *n = b;
      *start = 0;
      *len = p.T;
      return;
    }
    int64_t lo = 0, hi = p.N;  // the last n with off[n] <= tg (off[0] = 0 <= tg < off[N])
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (off(mid) <= tg)
        lo = mid;
      else
        hi = mid;
    }
    *n = lo;
    *start = off(lo);
    *len = max(int64_t{0}, off(lo + 1) - *start);
  }
  __device__ void seq_n(int64_t n, int64_t* b, int64_t* start, int64_t* len) const {
    *b = p.seq_offsets ? 0 : n;
    *start = p.seq_offsets ? off(n) : 0;
    *len = p.seq_offsets ? max(int64_t{0}, off(n + 1) - *start) : p.T;
  }
  __device__ Acc xval(int64_t b, int64_t d, int64_t tg) const {
    return cv(static_cast<const T*>(p.x)[b * p.sx.b + d * p.sx.d + tg * p.sx.t]);
  }
  // x̃ at sequence position tau for the output at position t (both relative to start).
  __device__ Acc xt(int64_t n, int64_t b, int64_t start, int64_t d, int64_t tau, int64_t t) const {
    if (tau >= 0) {
      if (p.seq_idx && sid(b, start + tau) != sid(b, start + t)) return Acc(0);
      return xval(b, d, start + tau);
    }
    if (!p.init) return Acc(0);
    return st(p.init, (n * p.D + d) * p.S + p.S + tau);
  }
  __device__ Acc z(int64_t n, int64_t b, int64_t start, int64_t d, int64_t t) const {
    Acc acc = p.bias ? cv(static_cast<const T*>(p.bias)[d]) : Acc(0);
    for (int64_t k = 0; k < p.W; ++k) acc += w(d, k) * xt(n, b, start, d, t - (p.W - 1) + k, t);
    return acc;
  }
  static __device__ Acc sigm(Acc v) { return Acc(1) / (Acc(1) + exp(-v)); }
  __device__ Acc dz(int64_t n, int64_t b, int64_t start, int64_t d, int64_t t) const {
    const Acc zt = z(n, b, start, d, t);
    Acc a = Acc(1);
    if (p.silu) {
      const Acc s = sigm(zt);
      a = s * (Acc(1) + zt * (Acc(1) - s));
    }
    return cv(static_cast<const T*>(p.dy)[b * p.sdy.b + d * p.sdy.d + (start + t) * p.sdy.t]) * a;
  }
  // Σ_k w_k·dz_{tau+W−1−k} over in-sequence outputs (equal seq_idx for tau >= 0).
  __device__ Acc gx(int64_t n, int64_t b, int64_t start, int64_t L, int64_t d, int64_t tau) const {
    Acc acc = Acc(0);
    for (int64_t k = 0; k < p.W; ++k) {
      const int64_t t = tau + (p.W - 1) - k;
      if (t < 0 || t >= L) continue;
      if (tau >= 0 && p.seq_idx && sid(b, start + tau) != sid(b, start + t)) continue;
      acc += w(d, k) * dz(n, b, start, d, t);
    }
    return acc;
  }
};

// Work item i -> (b, d, tile): time fastest for channel-first x, channel fastest otherwise.
__device__ __forceinline__ void split_item(const Params& p, int64_t i, int64_t tiles, int64_t* b,
                                           int64_t* d, int64_t* tile) {
  if (p.sx.t == 1) {
    *tile = i % tiles;
    *d = (i / tiles) % p.D;
    *b = i / (tiles * p.D);
  } else {
    *d = i % p.D;
    *tile = (i / p.D) % tiles;
    *b = i / (tiles * p.D);
  }
}

template <class T, class Acc>
__device__ __forceinline__ void store_y(const Params& p, int64_t b, int64_t d, int64_t tg, Acc v) {
  if (p.silu) v = v * Dev<T, Acc>::sigm(v);
  if (p.residual)
    v += Dev<T, Acc>::cv(
        static_cast<const T*>(p.residual)[b * p.sres.b + d * p.sres.d + tg * p.sres.t]);
  static_cast<T*>(p.y)[b * p.sy.b + d * p.sy.d + tg * p.sy.t] = Dev<T, Acc>::out(v);
}

// A tile inside one sequence (no seq_idx) reads its W−1+kTile inputs once into registers (the
// halo from x or the state); other tiles (a sequence boundary inside, or seq_idx) take each
// output's taps one by one.
template <class T, class Acc>
__global__ void fwd_kernel(Params p) {
  const Dev<T, Acc> g{p};
  const int64_t tiles = (p.T + kTile - 1) / kTile;
  const int64_t total = p.B * p.D * tiles;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t b, d, tile;
    split_item(p, i, tiles, &b, &d, &tile);
    const int64_t t0 = tile * kTile, t1 = min(p.T, t0 + kTile);
    int64_t n, start, L;
    g.seq_at(b, t0, &n, &start, &L);
    if (!p.seq_idx && t1 <= start + L) {
      Acc wr[8], win[8 - 1 + kTile];
#pragma unroll
      for (int k = 0; k < 8; ++k) wr[k] = k < p.W ? g.w(d, k) : Acc(0);
      const int64_t tau0 = t0 - start - (p.W - 1);  // x̃ position of win[0]
#pragma unroll
      for (int j = 0; j < 8 - 1 + kTile; ++j)
        win[j] = j < p.W - 1 + (t1 - t0) ? g.xt(n, b, start, d, tau0 + j, 0) : Acc(0);
      const Acc bias = p.bias ? Dev<T, Acc>::cv(static_cast<const T*>(p.bias)[d]) : Acc(0);
#pragma unroll
      for (int u = 0; u < kTile; ++u) {
        if (t0 + u >= t1) break;
        Acc acc = bias;
#pragma unroll
        for (int k = 0; k < 8; ++k)
          if (k < p.W) acc += wr[k] * win[u + k];
        store_y<T, Acc>(p, b, d, t0 + u, acc);
      }
      continue;
    }
    for (int64_t tg = t0; tg < t1; ++tg) {
      g.seq_at(b, tg, &n, &start, &L);
      store_y<T, Acc>(p, b, d, tg, g.z(n, b, start, d, tg - start));
    }
  }
}

// final_state[n, d, j]: position L + j of [init-or-zeros (S) ‖ x (L)].
template <class T, class Acc>
__global__ void final_state_kernel(Params p) {
  const Dev<T, Acc> g{p};
  const int64_t total = p.N * p.D * p.S;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t j = i % p.S, d = (i / p.S) % p.D, n = i / (p.S * p.D);
    int64_t b, start, L;
    g.seq_n(n, &b, &start, &L);
    const int64_t c = L + j;
    const Acc v = c >= p.S ? g.xval(b, d, start + c - p.S)
                           : (p.init ? g.st(p.init, (n * p.D + d) * p.S + c) : Acc(0));
    g.st_put(p.final_state, i, v);
  }
}

template <class T, class Acc>
__global__ void dx_kernel(Params p) {
  const Dev<T, Acc> g{p};
  const int64_t total = p.B * p.D * p.T;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    int64_t b, d, tg;
    split_item(p, i, p.T, &b, &d, &tg);
    int64_t n, start, L;
    g.seq_at(b, tg, &n, &start, &L);
    const int64_t tau = tg - start;
    Acc v = g.gx(n, b, start, L, d, tau);
    const int64_t c = tau + p.S;  // position in [init ‖ x]
    if (p.dfinal && c >= L) v += g.st(p.dfinal, (n * p.D + d) * p.S + c - L);
    static_cast<T*>(p.dx)[b * p.sdx.b + d * p.sdx.d + tg * p.sdx.t] = Dev<T, Acc>::out(v);
    if (p.dres)
      static_cast<T*>(p.dres)[b * p.sdres.b + d * p.sdres.d + tg * p.sdres.t] =
          static_cast<const T*>(p.dy)[b * p.sdy.b + d * p.sdy.d + tg * p.sdy.t];
  }
}

template <class T, class Acc>
__global__ void dinit_kernel(Params p) {
  const Dev<T, Acc> g{p};
  const int64_t total = p.N * p.D * p.S;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t c = i % p.S, d = (i / p.S) % p.D, n = i / (p.S * p.D);
    int64_t b, start, L;
    g.seq_n(n, &b, &start, &L);
    Acc v = g.gx(n, b, start, L, d, c - p.S);
    if (p.dfinal && c >= L) v += g.st(p.dfinal, (n * p.D + d) * p.S + c - L);
    g.st_put(p.dinit, i, v);
  }
}

// Stage 1: ws[chunk, d, k] = Σ_{tokens of chunk} dz·x̃ (k < W) and Σ dz (k = W), in token order.
template <class T, class Acc>
__global__ void partials_kernel(Params p, int64_t chunks) {
  const Dev<T, Acc> g{p};
  const int64_t total = chunks * p.D;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  Acc* ws = static_cast<Acc*>(p.workspace);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const int64_t d = i % p.D, chunk = i / p.D;
    Acc acc[9] = {};
    const int64_t end = min(p.B * p.T, (chunk + 1) * kChunk);
    for (int64_t tok = chunk * kChunk; tok < end; ++tok) {
      const int64_t b = tok / p.T, tg = tok % p.T;
      int64_t n, start, L;
      g.seq_at(b, tg, &n, &start, &L);
      const int64_t t = tg - start;
      const Acc dzt = g.dz(n, b, start, d, t);
      for (int64_t k = 0; k < p.W; ++k) acc[k] += dzt * g.xt(n, b, start, d, t - (p.W - 1) + k, t);
      acc[p.W] += dzt;
    }
    for (int64_t k = 0; k <= p.W; ++k) ws[(chunk * p.D + d) * (p.W + 1) + k] = acc[k];
  }
}

// Stage 2: one thread per channel adds the chunks in order.
template <class T, class Acc>
__global__ void reduce_kernel(Params p, int64_t chunks) {
  const Acc* ws = static_cast<const Acc*>(p.workspace);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t d = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; d < p.D;
       d += step) {
    Acc acc[9] = {};
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t k = 0; k <= p.W; ++k) acc[k] += ws[(c * p.D + d) * (p.W + 1) + k];
    T* dw = static_cast<T*>(p.dweight);
    for (int64_t k = 0; k < p.W; ++k)
      dw[p.wd ? k * p.D + d : d * p.W + k] = Dev<T, Acc>::out(acc[k]);
    if (p.dbias) static_cast<T*>(p.dbias)[d] = Dev<T, Acc>::out(acc[p.W]);
  }
}

}  // namespace recops::ops::causal_conv1d_ns
