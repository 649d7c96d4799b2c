// block_sparse_attention/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>

#include "ops/stem/common/qkv_params.h"

namespace recops::ops {

// q, k, v (bf16 or fp16, v with k's shape) and the index tensors: stem/common/qkv_params.h.
struct BlockSparseAttentionParams : stem::QkvParams {
  // sparse_indices int32 [B, Nq, Qmax, Kmax] and sparse_seq_len int32 [B, Nq, Qmax], contiguous.
  const int32_t* indices = nullptr;
  const int32_t* seq_len = nullptr;
  // out [Tq, Nq, D] (q's dtype), lse fp32 [Nq, Tq]; contiguous.
  void* out = nullptr;
  float* lse = nullptr;

  int64_t G = 1;  // Nq / Nk
  double scale = 1.0;
  bool causal = true;

  // The valid prefix length of row (b, hq, i), clamped into [0, Kmax].
  int64_t row_len(int64_t b, int64_t hq, int64_t i) const {
    const int64_t L = seq_len[(b * Nq + hq) * Qmax + i];
    return L < 0 ? 0 : (L > Kmax ? Kmax : L);
  }
  const int32_t* row_ids(int64_t b, int64_t hq, int64_t i) const {
    return indices + ((b * Nq + hq) * Qmax + i) * Kmax;
  }
};

}  // namespace recops::ops
