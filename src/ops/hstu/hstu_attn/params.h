// hstu_attn/params.h: the flat problem description shared by the entry, the reference and cpu/.
// Raw pointers, element strides (int64), sizes, scales and flags; nothing else.
//
// Token addressing, one rule for both layouts: token i of sequence b of tensor X sits at
//   X + b * x_batch_stride + (start_b + i) * x_row_stride + head * x_head_stride
// with start_b = seq_offsets[b] and batch stride 0 (jagged), or start_b = 0 (dense).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops {

struct HstuAttnParams {
  DType dtype = DType::fp32;  // of q, k, v, out, rab, kv_cache and every gradient
  bool jagged = true;
  int64_t B = 0, Hq = 0, Hk = 0, d = 0, dv = 0;
  int64_t Sq = 0, Sk = 0;  // max_seq_len_q / max_seq_len_k (padded extents of rab and mask)
  // Extents of the tensors (rows of q and of k/v, pages of kv_cache, entries of page_ids): the
  // CUDA kernels read offsets on the device and clamp them into these, so that unvalidated data
  // can never address memory outside the tensors.
  int64_t total_q = 0, total_k = 0, num_pages = 0, num_page_ids = 0;
  int device_index = 0;  // CUDA device of the tensors (cuda_capability_at_least)

  // q: (total_q, Hq, d) or (B, Sq, Hq, d); k: (.., Hk, d); v: (.., Hk, dv); out: like q, dv.
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  int64_t q_batch = 0, q_row = 0, q_head = 0;
  int64_t k_batch = 0, k_row = 0, k_head = 0;
  int64_t v_batch = 0, v_row = 0, v_head = 0;
  int64_t o_batch = 0, o_row = 0, o_head = 0;

  // Backward: dout like out, dq/dk/dv like q/k/v, drab like rab (nullptr: not wanted).
  const void* dout = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv_out = nullptr;
  void* drab = nullptr;
  int64_t do_batch = 0, do_row = 0, do_head = 0;
  int64_t dq_batch = 0, dq_row = 0, dq_head = 0;
  int64_t dk_batch = 0, dk_row = 0, dk_head = 0;
  int64_t dv_batch = 0, dv_row = 0, dv_head = 0;
  int64_t drab_s[4] = {};  // drab strides (B, heads, Sq, Sk); head stride 0 never (own tensor)

  // seq_offsets_q / _k: (B+1,) int32 or int64 (jagged only).
  const void* offsets_q = nullptr;
  const void* offsets_k = nullptr;
  bool offsets_q_int64 = false, offsets_k_int64 = false;
  int64_t offsets_q_stride = 1, offsets_k_stride = 1;

  // Mask configuration (spec §3).
  const void* num_contexts = nullptr;  // (B,) or nullptr
  const void* num_targets = nullptr;   // (B,) or nullptr
  bool contexts_int64 = false, targets_int64 = false;
  int64_t contexts_stride = 1, targets_stride = 1;
  int64_t group_size = 1;
  int64_t window_left = -1, window_right = 0;  // effective window of the built-in mask
  // custom mask (B, Hm, Sq, Sk), bool or dtype; nonzero keeps. Head stride 0 when Hm = 1.
  const void* mask = nullptr;
  DType mask_dtype = DType::boolean;
  int64_t mask_s[4] = {};
  // func (Hf, nfunc, total_q) int32; head stride 0 when Hf = 1.
  const int32_t* func = nullptr;
  int64_t nfunc = 0;
  int64_t func_s[3] = {};

  // rab (B, Hr, Sq, Sk) in dtype; head stride 0 when Hr = 1 (rab_heads = 1).
  const void* rab = nullptr;
  int64_t rab_heads = 0;
  int64_t rab_s[4] = {};

  double alpha = 1.0;
  double silu_scale = 1.0;
  const float* attn_scale = nullptr;  // (total_q,) replaces silu_scale per query token
  int64_t attn_scale_stride = 1;

  // Paged KV: kv_cache (num_pages, 2, page_size, Hk, d); page_offsets (B+1); page_ids; last_len.
  const void* kv_cache = nullptr;
  int64_t page_size = 0;
  int64_t kv_s[5] = {};
  const void* page_offsets = nullptr;
  const void* page_ids = nullptr;
  const void* last_page_len = nullptr;
  bool page_offsets_int64 = false, page_ids_int64 = false, last_page_len_int64 = false;
  int64_t page_offsets_stride = 1, page_ids_stride = 1, last_page_len_stride = 1;

  // Reference only: run in the inputs' precision (the double standard's plain baseline).
  bool plain = false;

  static int64_t load(const void* p, bool is64, int64_t stride, int64_t i) {
    return is64 ? static_cast<const int64_t*>(p)[i * stride]
                : static_cast<const int32_t*>(p)[i * stride];
  }
  // First token of sequence b in q / in the new k tokens (0 for dense).
  int64_t q_start(int64_t b) const {
    return jagged ? load(offsets_q, offsets_q_int64, offsets_q_stride, b) : 0;
  }
  int64_t k_start(int64_t b) const {
    return jagged ? load(offsets_k, offsets_k_int64, offsets_k_stride, b) : 0;
  }
  int64_t len_q(int64_t b) const { return jagged ? q_start(b + 1) - q_start(b) : Sq; }
  // New k/v tokens held in k and v (all of Lk without a cache).
  int64_t len_k_new(int64_t b) const { return jagged ? k_start(b + 1) - k_start(b) : Sk; }
  // Cached tokens of sequence b (paged KV), 0 without a cache.
  int64_t len_cached(int64_t b) const {
    if (!kv_cache) return 0;
    const int64_t np = load(page_offsets, page_offsets_int64, page_offsets_stride, b + 1) -
                       load(page_offsets, page_offsets_int64, page_offsets_stride, b);
    if (np == 0) return 0;
    return (np - 1) * page_size + load(last_page_len, last_page_len_int64, last_page_len_stride, b);
  }
  int64_t len_k(int64_t b) const { return len_cached(b) + len_k_new(b); }
  int64_t contexts(int64_t b) const {
    return num_contexts ? load(num_contexts, contexts_int64, contexts_stride, b) : 0;
  }
  int64_t targets(int64_t b) const {
    return num_targets ? load(num_targets, targets_int64, targets_stride, b) : 0;
  }
  // Global index of query token i of sequence b (the last dim of func and attn_scale).
  int64_t q_token(int64_t b, int64_t i) const { return jagged ? q_start(b) + i : b * Sq + i; }
};

}  // namespace recops::ops
