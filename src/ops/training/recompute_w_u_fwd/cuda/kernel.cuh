// training/recompute_w_u_fwd/cuda/kernel.cuh: the device code (reads only the params).
//
// One launch per output (u from v, w from k). Work items: (chunk slot, value head hv, column
// tile of DT columns of D = V or K); the slots are training/common/cuda/gdn_chunks.cuh's sync-free
// chunk grid (an empty slot's block goes on to its next item). Per item the block stages in
// shared memory, widened to S: the chunk's R x R block of Ai (row-padded against bank conflicts),
// the coefficients c_j = beta_j (w: beta_j * exp(G_j), exp2 with gate_log2; G <= 0, so only
// exponentials of non-positive values are formed) and the right-hand rows x_j = c_j * src_j over
// the tile's columns (src: v at hv, or k at key head hv / (HV / H)), loaded along the contiguous
// dimension. Thread (ty, tx) then forms output rows ty, ty + RG, ... of column tx as
// sum_{j < R} Ai[t, j] * x_j with FMAs in column order (j ascending, as the CPU path), S = fp32
// (fp64 for an fp64 output), and rounds each once to the output's dtype. No atomics: each output
// element comes from one thread, so results are deterministic.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda/numeric.cuh"
#include "ops/training/common/cuda/gdn_chunks.cuh"
#include "ops/training/recompute_w_u_fwd/cuda/tiles.h"
#include "ops/training/recompute_w_u_fwd/params.h"

namespace recops::ops::recompute_w_u_fwd_ns {

// TX: the C++ type of the source (k or v) and of the output (w or u). with_k: w from k (D = K),
// else u from v (D = V). items = slots * HV * tiles, tiles = ceil(D / DT).
template <class TX>
__global__ void __launch_bounds__(kThreads)
    recompute_w_u_fwd_kernel(const Params p, bool with_k, int64_t tiles, int64_t items) {
  using S = std::conditional_t<std::is_same_v<TX, double>, double, float>;
  constexpr int DT = kCols<S>;
  constexpr int RG = kThreads / DT;  // row groups
  constexpr int RPT = kMaxBT / RG;   // rows a thread at most
  __shared__ S a_s[kMaxBT][kMaxBT + 1];
  __shared__ S x_s[kMaxBT][DT];
  __shared__ S c_s[kMaxBT];
  const TX* src = static_cast<const TX*>(with_k ? p.k : p.v);
  TX* dst = static_cast<TX*>(with_k ? p.w : p.u);
  const int64_t HV = p.HV, BT = p.BT, group = HV / p.H;
  const int64_t D = with_k ? p.K : p.V, heads = with_k ? p.H : HV;
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % DT, ty = tid / DT;
  const bool gated = with_k && p.g != nullptr;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const training_dev::GdnItem it =
        training_dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, HV, tiles, item);
    const training_dev::GdnChunk& ch = it.ch;
    const int64_t hv = it.hv, tile = it.tile;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int R = static_cast<int>(ch.len);
    const int64_t head = with_k ? hv / group : hv, col0 = tile * DT;
    for (int e = tid; e < R * R; e += kThreads) {
      const int t = e / R, j = e % R;
      a_s[t][j] = training_dev::gdn_load<S>(p.Ai, p.Ai_dtype, ((ch.row0 + t) * HV + hv) * BT + j);
    }
    if (tid < R) {
      const int64_t at = (ch.row0 + tid) * HV + hv;
      S c = training_dev::gdn_load<S>(p.beta, p.beta_dtype, at);
      if (gated)
        c = c * training_dev::gdn_exp(training_dev::gdn_load<S>(p.g, p.g_dtype, at), p.gate_log2);
      c_s[tid] = c;
    }
    __syncthreads();
    for (int e = tid; e < R * DT; e += kThreads) {
      const int j = e / DT, d = e % DT;
      const int64_t col = col0 + d;
      S x = S(0);
      if (col < D) {
        const TX s = src[((ch.row0 + j) * heads + head) * D + col];
        if constexpr (std::is_same_v<TX, double>)
          x = c_s[j] * s;
        else
          x = c_s[j] * core::cuda::to_float(s);
      }
      x_s[j][d] = x;
    }
    __syncthreads();
    S acc[RPT];
#pragma unroll
    for (int i = 0; i < RPT; ++i) acc[i] = S(0);
    for (int j = 0; j < R; ++j) {
      const S xv = x_s[j][tx];
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R) acc[i] = training_dev::gdn_fma(a_s[t][j], xv, acc[i]);
      }
    }
    const int64_t col = col0 + tx;
    if (col < D) {
#pragma unroll
      for (int i = 0; i < RPT; ++i) {
        const int t = ty + RG * i;
        if (t < R)
          dst[((ch.row0 + t) * HV + hv) * D + col] = training_dev::gdn_narrow<S, TX>(acc[i]);
      }
    }
    __syncthreads();  // the next item overwrites the tiles
  }
}

}  // namespace recops::ops::recompute_w_u_fwd_ns
