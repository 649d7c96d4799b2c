// stem/common/qkv_params.h: the part of the flat params that stem_prepare and
// block_sparse_attention share: q packed by cu_seqlens_q, k/v packed by cu_seqlens_kv or paged by
// block_table, and the grid of blocks. Raw pointers, element strides, sizes; each op's params.h
// adds its own fields.
#pragma once

#include <cstdint>
#include <vector>

#include "recops/dtype.h"

namespace recops::ops::stem {

struct QkvParams {
  DType dtype = DType::bf16;  // of q, k and v (each op's params.h says which it takes)
  // q [Tq, Nq, D]; k, v [Tk, Nk, D|Dv] packed or [pages, page_size, Nk, D|Dv] paged. Last stride
  // 1; the token and head strides are free (in elements).
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_tok_stride = 0, q_head_stride = 0;
  int64_t k_tok_stride = 0, k_head_stride = 0, k_page_stride = 0;
  int64_t v_tok_stride = 0, v_head_stride = 0, v_page_stride = 0;
  bool paged = false;
  int64_t page_size = 0, num_pages = 0, max_pages = 0;
  // Host copies of the index tensors (the CPU reads them; CUDA kernels read the tensors).
  std::vector<int64_t> cu_q;   // [B+1]
  std::vector<int64_t> Lk;     // [B]
  std::vector<int64_t> cu_kv;  // [B+1] packed
  std::vector<int64_t> table;  // [B * max_pages] paged
  // The index tensors themselves (int32, on the tensors' device; element strides) for kernels that
  // read them on the device (CUDA), and the token counts of q and packed k/v for clamping.
  const int32_t* d_cu_q = nullptr;
  const int32_t* d_lk = nullptr;
  const int32_t* d_cu_kv = nullptr;
  const int32_t* d_table = nullptr;  // contiguous [B, max_pages]
  int64_t d_cu_q_stride = 1, d_lk_stride = 1, d_cu_kv_stride = 1;
  int64_t Tq = 0, Tk = 0;
  // Batches, query and KV heads, head dim (of q and k); Qmax x Kmax blocks of Bs tokens.
  int64_t B = 0, Nq = 0, Nk = 0, D = 0, Qmax = 0, Kmax = 0, Bs = 128;
  int device_index = 0;

  // Element offsets of token s of batch b, head h, in k and in v.
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
};

}  // namespace recops::ops::stem
