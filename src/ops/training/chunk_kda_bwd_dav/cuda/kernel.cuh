// training/chunk_kda_bwd_dav/cuda/kernel.cuh: the device code (reads only the params).
//
// Work items: (chunk slot, value head hv), the slots being training/common/cuda/gdn_chunks.cuh's
// sync-free chunk grid (an empty slot's block goes on to its next item). One block per item,
// S = fp32 (fp64 when do is fp64) as the CPU path. The lower part of the chunk's Aqk block
// (j ≤ i < L) is staged once in shared memory as S; then V is walked in tiles of VT columns, do
// and v_new of the tile staged as S:
// - dAqk: thread t owns the entries (i, j) = (e / 64, e % 64), e = t + 256 s, and accumulates
//   do_i · v_new_j in registers across the tiles in the order d = 0, 1, ... (FMAs); at the end
//   dAqk_ij = scale·sum for j ≤ i, 0 for j > i (every one of the BT columns of a valid row).
// - dv of the tile: thread (ty, tx) forms rows ty, ty + RG, ... of column tx as
//   Σ_{i ≥ j} Aqk_ij·do_i with FMAs in i order, rounded once to do's dtype.
// Every output element comes from one thread (no atomics, deterministic).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "ops/training/chunk_kda_bwd_dav/cuda/tiles.h"
#include "ops/training/chunk_kda_bwd_dav/params.h"
#include "ops/training/common/cuda/gdn_chunk.cuh"
#include "ops/training/common/cuda/gdn_chunks.cuh"

namespace recops::ops::chunk_kda_bwd_dav_ns {

namespace dev = training_dev;
namespace gc = training::gdn_cuda;

template <class S>
__global__ void __launch_bounds__(kThreads)
    chunk_kda_bwd_dav_kernel(const Params p, int64_t items) {
  constexpr int VT = kVT<S>, VP = VT + 1;
  constexpr int RG = kThreads / VT;                // row groups of the dv tile
  constexpr int RPT = kMaxBT / RG;                 // dv rows a thread at most
  constexpr int EPT = kMaxBT * kMaxBT / kThreads;  // dAqk entries a thread
  __shared__ S a_s[kMaxBT * kMaxBT];               // Aqk's lower block (row stride 64)
  __shared__ S do_s[kMaxBT * VP];
  __shared__ S vn_s[kMaxBT * VP];
  const int64_t HV = p.HV, V = p.V, BT = p.BT;
  const S scale = static_cast<S>(p.scale);
  const int tid = static_cast<int>(threadIdx.x);
  const int tx = tid % VT, ty = tid / VT;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const dev::GdnItem it = dev::gdn_item(p.seq_offsets, p.off_dtype, p.N, p.T, BT, HV, 1, item);
    const dev::GdnChunk& ch = it.ch;
    if (ch.len <= 0) continue;  // the same for the whole block
    const int R = static_cast<int>(ch.len);
    const int64_t hv = it.hv, row0 = ch.row0;
    for (int e = tid; e < R * kMaxBT; e += kThreads) {
      const int i = e / kMaxBT, j = e % kMaxBT;
      a_s[e] = j <= i ? dev::gdn_load<S>(p.Aqk, p.A_dtype, ((row0 + i) * HV + hv) * BT + j) : S(0);
    }
    S acc[EPT];
#pragma unroll
    for (int s = 0; s < EPT; ++s) acc[s] = S(0);
    for (int64_t v0 = 0; v0 < V; v0 += VT) {
      for (int e = tid; e < R * VT; e += kThreads) {
        const int i = e / VT, d = e % VT;
        const int64_t col = v0 + d;
        S x = S(0), y = S(0);  // zero past V: contributes nothing
        if (col < V) {
          const int64_t at = ((row0 + i) * HV + hv) * V + col;
          x = dev::gdn_load<S>(p.d_o, p.do_dtype, at);
          y = dev::gdn_load<S>(p.v_new, p.vn_dtype, at);
        }
        do_s[i * VP + d] = x;
        vn_s[i * VP + d] = y;
      }
      __syncthreads();  // also orders a_s before its first read
#pragma unroll
      for (int s = 0; s < EPT; ++s) {
        const int e = tid + kThreads * s;
        const int i = e / kMaxBT, j = e % kMaxBT;
        if (i < R && j <= i) {
          S sum = acc[s];
          for (int d = 0; d < VT; ++d) sum = dev::gdn_fma(do_s[i * VP + d], vn_s[j * VP + d], sum);
          acc[s] = sum;
        }
      }
      S dv[RPT];
#pragma unroll
      for (int r = 0; r < RPT; ++r) dv[r] = S(0);
      for (int i = 0; i < R; ++i) {
        const S x = do_s[i * VP + tx];
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const int j = ty + RG * r;
          if (j <= i) dv[r] = dev::gdn_fma(a_s[i * kMaxBT + j], x, dv[r]);
        }
      }
      const int64_t col = v0 + tx;
      if (col < V) {
#pragma unroll
        for (int r = 0; r < RPT; ++r) {
          const int j = ty + RG * r;
          if (j < R) gc::store(p.dv, p.do_dtype, ((row0 + j) * HV + hv) * V + col, dv[r]);
        }
      }
      __syncthreads();  // the next tile overwrites do_s and vn_s
    }
#pragma unroll
    for (int s = 0; s < EPT; ++s) {
      const int e = tid + kThreads * s;
      const int i = e / kMaxBT, j = e % kMaxBT;
      if (i < R && j < BT)
        p.dAqk[((row0 + i) * HV + hv) * BT + j] =
            static_cast<float>(j <= i ? scale * acc[s] : S(0));
    }
    __syncthreads();  // the next item overwrites a_s
  }
}

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
