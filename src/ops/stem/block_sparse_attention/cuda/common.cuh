// block_sparse_attention/cuda/common.cuh: what the three CUDA paths share (the kernel arguments,
// the dtype ops, the tile and batch-row lookups, the tail kernel), so that the sm90 header needs
// none of the sm80 kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda/mma.cuh"
#include "ops/stem/block_sparse_attention/params.h"
#include "ops/stem/common/cuda/qkv_args.cuh"

namespace recops::ops::bsa_cuda {

// q, k, v (bf16 or fp16 bits) and the index tensors: stem/common/cuda/qkv_args.cuh.
struct Args : stem_cuda::QkvArgs<uint16_t> {
  const int32_t* indices;
  const int32_t* seq_len;
  uint16_t* out;
  float* lse;
  int64_t G, sub_per_block, num_tiles;
  float scale;
  bool causal;
  bool vec;  // 16-byte row loads are aligned
};

using stem_cuda::clamp64;
using stem_cuda::kv_token;

// The m16n8k16 MMA and the packing of two fp32 values into a register, for T = bf16 or fp16.
template <class T>
struct Ops {
  static __device__ __forceinline__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    core::cuda::mma_16816<T>(c, a, b0, b1);
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    return core::cuda::pack2<T>(lo, hi);
  }
};

// Copies 8 elements of a row (16 bytes) into shared memory, or zeros for a null row.
__device__ __forceinline__ void copy8(uint16_t* dst, const uint16_t* src, bool vec) {
  if (src == nullptr) {
    *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);
  } else if (vec) {
    *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(src));
  } else {
    for (int e = 0; e < 8; ++e) dst[e] = __ldg(src + e);
  }
}

// The grid-stride walk's tile: batch b, query head hq (KV head hk), query block i and the tile's
// place `sub` among the Qmax·sub_per_block sub-blocks (last query blocks first, the heads of one
// query block adjacent).
struct TileAt {
  int64_t b, hq, hk, i, sub;
};
__device__ __forceinline__ TileAt tile_at(const Args& a, int64_t tile) {
  const int64_t bh = tile % (a.B * a.Nq);
  const int64_t sub = a.Qmax * a.sub_per_block - 1 - tile / (a.B * a.Nq);
  const int64_t b = bh / a.Nq, hq = bh % a.Nq;
  return {b, hq, hq / a.G, sub / a.sub_per_block, sub};
}

// Batch b's rows, read on the device and clamped into the tensors: q rows [q0, q0 + Lq) and keys
// [kv0, kv0 + Lk) of k/v (kv0 = 0 when paged), Lk at most `cap`.
struct BatchRows {
  int64_t q0, Lq, kv0, Lk;
};
__device__ __forceinline__ BatchRows batch_rows(const Args& a, int64_t b, int64_t cap) {
  BatchRows r;
  r.q0 = clamp64(a.cu_q[b * a.cu_q_stride], 0, a.Tq);
  r.Lq = clamp64(a.cu_q[(b + 1) * a.cu_q_stride], r.q0, a.Tq) - r.q0;
  r.kv0 = 0;
  r.Lk = clamp64(a.lk[b * a.lk_stride], 0, cap);
  if (a.paged) {
    r.Lk = r.Lk < a.max_pages * a.page_size ? r.Lk : a.max_pages * a.page_size;
  } else {
    r.kv0 = clamp64(a.cu_kv[b * a.cu_kv_stride], 0, a.Tk);
    r.Lk = r.Lk < a.Tk - r.kv0 ? r.Lk : a.Tk - r.kv0;
  }
  return r;
}

// Rows of q past cu_seqlens_q[B] belong to no batch: out 0, lse −inf.
__global__ void bsa_tail_kernel(Args a, int64_t D);

}  // namespace recops::ops::bsa_cuda
