// stem_prepare/params.h: the flat problem description shared by the entry, the reference, cpu/
// and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>
#include <vector>

#include "recops/dtype.h"

namespace recops::ops {

struct StemPrepareParams {
  DType dtype = DType::bf16;  // of q, k, v (bf16, fp16 or fp8_e4m3)
  // q [Tq, Nq, D]; k [Tk, Nk, D] / v [Tk, Nk, Dv] packed, or [pages, page, Nk, D/Dv] paged.
  // Last stride 1; the token and head strides are free (in elements).
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t q_tok_stride = 0, q_head_stride = 0;
  int64_t k_tok_stride = 0, k_head_stride = 0, k_page_stride = 0;
  int64_t v_tok_stride = 0, v_head_stride = 0, v_page_stride = 0;
  bool paged = false;
  int64_t page_size = 0, num_pages = 0;
  // Host copies of the index tensors (the CPU reads them; CUDA kernels get device copies).
  std::vector<int64_t> cu_q;   // [B+1]
  std::vector<int64_t> Lk;     // [B]
  std::vector<int64_t> cu_kv;  // [B+1] packed
  std::vector<int64_t> table;  // [B * max_pages] paged
  int64_t max_pages = 0;
  // The index tensors themselves (int32, on the tensors' device; element strides) for kernels that
  // read them on the device (CUDA), and the token counts of q and packed k/v for clamping.
  const int32_t* d_cu_q = nullptr;
  const int32_t* d_lk = nullptr;
  const int32_t* d_cu_kv = nullptr;
  const int32_t* d_table = nullptr;  // contiguous [B, max_pages]
  int64_t d_cu_q_stride = 1, d_lk_stride = 1, d_cu_kv_stride = 1;
  int64_t Tq = 0, Tk = 0;
  // Scales: nullptr = 1. q_scale per token and head when q_scale_per_token, else one value;
  // k_scale likewise ([Tk, Nk] packed, [pages, page, Nk] paged, contiguous); v_scale [1] or [Nk].
  const float* q_scale = nullptr;
  const float* k_scale = nullptr;
  const float* v_scale = nullptr;
  bool q_scale_per_token = false, k_scale_per_token = false, v_scale_per_head = false;
  // Outputs (contiguous): qflat bf16 [B, Nq, Qmax, Ts·D], kflat bf16 [B, Nk, Kmax, Ts·D],
  // vbias fp32 [B, Nk, Kmax].
  uint16_t* qflat = nullptr;
  uint16_t* kflat = nullptr;
  float* vbias = nullptr;

  int64_t B = 0, Nq = 0, Nk = 0, D = 0, Dv = 0, Qmax = 0, Kmax = 0;
  int64_t Bs = 128, Ts = 16, R = 8;
  double lambda_mag = 0.3;
  int device_index = 0;

  // Flat token index of token s of batch b in k/v: the packed row, or page·page_size + slot
  // (k_scale is indexed by it times Nk plus the head).
  int64_t kv_token(int64_t b, int64_t s) const {
    if (!paged) return cu_kv[b] + s;
    return table[b * max_pages + s / page_size] * page_size + s % page_size;
  }
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
  float q_scale_at(int64_t tok, int64_t h) const {
    return q_scale ? (q_scale_per_token ? q_scale[tok * Nq + h] : q_scale[0]) : 1.0f;
  }
  float k_scale_at(int64_t b, int64_t s, int64_t h) const {
    return k_scale ? (k_scale_per_token ? k_scale[kv_token(b, s) * Nk + h] : k_scale[0]) : 1.0f;
  }
  float v_scale_at(int64_t h) const {
    return v_scale ? (v_scale_per_head ? v_scale[h] : v_scale[0]) : 1.0f;
  }
};

}  // namespace recops::ops
