// stem/common/cuda/qkv_args.cuh: the q/k/v part of the kernel arguments of stem_prepare and
// block_sparse_attention (from stem::QkvParams), and the device helpers both read it with.
#pragma once

#include <cstdint>

#include "ops/stem/common/qkv_params.h"

namespace recops::ops::stem_cuda {

// E: the element type the kernels read q, k and v as (void when it depends on the dtype).
template <class E>
struct QkvArgs {
  const E* q;
  const E* k;
  const E* v;
  int64_t q_tok_stride, q_head_stride;
  int64_t k_tok_stride, k_head_stride, k_page_stride;
  int64_t v_tok_stride, v_head_stride, v_page_stride;
  bool paged;
  int64_t page_size, num_pages, max_pages;
  const int32_t* cu_q;
  const int32_t* lk;
  const int32_t* cu_kv;
  const int32_t* table;
  int64_t cu_q_stride, lk_stride, cu_kv_stride;
  int64_t Tq, Tk;
  int64_t B, Nq, Nk, D, Qmax, Kmax, Bs;
};

template <class E>
void set_qkv_args(const stem::QkvParams& p, QkvArgs<E>* a) {
  a->q = static_cast<const E*>(p.q);
  a->k = static_cast<const E*>(p.k);
  a->v = static_cast<const E*>(p.v);
  a->q_tok_stride = p.q_tok_stride;
  a->q_head_stride = p.q_head_stride;
  a->k_tok_stride = p.k_tok_stride;
  a->k_head_stride = p.k_head_stride;
  a->k_page_stride = p.k_page_stride;
  a->v_tok_stride = p.v_tok_stride;
  a->v_head_stride = p.v_head_stride;
  a->v_page_stride = p.v_page_stride;
  a->paged = p.paged;
  a->page_size = p.page_size;
  a->num_pages = p.num_pages;
  // A paged cache with no pages has no key tokens: every batch reads as empty.
  a->max_pages = p.paged && p.num_pages == 0 ? 0 : p.max_pages;
  a->cu_q = p.d_cu_q;
  a->lk = p.d_lk;
  a->cu_kv = p.d_cu_kv;
  a->table = p.d_table;
  a->cu_q_stride = p.d_cu_q_stride;
  a->lk_stride = p.d_lk_stride;
  a->cu_kv_stride = p.d_cu_kv_stride;
  a->Tq = p.Tq;
  a->Tk = p.Tk;
  a->B = p.B;
  a->Nq = p.Nq;
  a->Nk = p.Nk;
  a->D = p.D;
  a->Qmax = p.Qmax;
  a->Kmax = p.Kmax;
  a->Bs = p.Bs;
}

__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

// Flat token (packed row kv0 + s, or page·page_size + slot) of key s < Lk of batch b.
template <class E>
__device__ __forceinline__ int64_t kv_token(const QkvArgs<E>& a, int64_t b, int64_t kv0,
                                            int64_t s) {
  if (!a.paged) return kv0 + s;
  const int64_t page = clamp64(a.table[b * a.max_pages + s / a.page_size], 0, a.num_pages - 1);
  return page * a.page_size + s % a.page_size;
}

}  // namespace recops::ops::stem_cuda
