// stem_prepare/params.h: the flat problem description shared by the entry, the reference, cpu/
// and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>

#include "ops/stem/common/qkv_params.h"

namespace recops::ops {

// q, k, v (bf16, fp16 or fp8_e4m3; v's head dim Dv) and the index tensors:
// stem/common/qkv_params.h.
struct StemPrepareParams : stem::QkvParams {
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

  int64_t Dv = 0, Ts = 16, R = 8;  // v's head dim, stem_stride, Bs / Ts
  double lambda_mag = 0.3;

  // Flat token index of token s of batch b in k/v: the packed row, or page·page_size + slot
  // (k_scale is indexed by it times Nk plus the head).
  int64_t kv_token(int64_t b, int64_t s) const {
    if (!paged) return cu_kv[b] + s;
    return table[b * max_pages + s / page_size] * page_size + s % page_size;
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
