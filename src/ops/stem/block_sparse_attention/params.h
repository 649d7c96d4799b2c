// block_sparse_attention/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>
#include <vector>

#include "recops/dtype.h"

namespace recops::ops {

struct BlockSparseAttentionParams {
  DType dtype = DType::bf16;  // of q, k, v and out (bf16 or fp16)
  // q [Tq, Nq, D]; k, v [Tk, Nk, D] packed or [pages, page_size, Nk, D] paged; last stride 1.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_tok_stride = 0, q_head_stride = 0;
  int64_t k_tok_stride = 0, k_head_stride = 0, k_page_stride = 0;
  int64_t v_tok_stride = 0, v_head_stride = 0, v_page_stride = 0;
  bool paged = false;
  int64_t page_size = 0, num_pages = 0, max_pages = 0;
  // Host copies of the index tensors.
  std::vector<int64_t> cu_q, Lk, cu_kv, table;
  // The index tensors themselves (int32, on the tensors' device; element strides) for kernels that
  // read them on the device (CUDA), and the token count of packed k/v for clamping.
  const int32_t* d_cu_q = nullptr;
  const int32_t* d_lk = nullptr;
  const int32_t* d_cu_kv = nullptr;
  const int32_t* d_table = nullptr;  // contiguous [B, max_pages]
  int64_t d_cu_q_stride = 1, d_lk_stride = 1, d_cu_kv_stride = 1;
  int64_t Tk = 0;
  // sparse_indices int32 [B, Nq, Qmax, Kmax] and sparse_seq_len int32 [B, Nq, Qmax], contiguous.
  const int32_t* indices = nullptr;
  const int32_t* seq_len = nullptr;
  // out [Tq, Nq, D] (q's dtype), lse fp32 [Nq, Tq]; contiguous.
  void* out = nullptr;
  float* lse = nullptr;

  int64_t B = 0, Nq = 0, Nk = 0, G = 1, D = 0, Tq = 0, Qmax = 0, Kmax = 0;
  int64_t Bs = 128;
  double scale = 1.0;
  bool causal = true;
  int device_index = 0;

  int64_t k_off(int64_t b, int64_t s, int64_t h) const {
    if (!paged) return (cu_kv[b] + s) * k_tok_stride + h * k_head_stride;
    return table[b * max_pages + s / page_size] * k_page_stride + (s % page_size) * k_tok_stride +
           h * k_head_stride;
  }
  int64_t v_off(int64_t b, int64_t s, int64_t h) const {
    if (!paged) return (cu_kv[b] + s) * v_tok_stride + h * v_head_stride;
    return table[b * max_pages + s / page_size] * v_page_stride + (s % page_size) * v_tok_stride +
           h * v_head_stride;
  }
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
