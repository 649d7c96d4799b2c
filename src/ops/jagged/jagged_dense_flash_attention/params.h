// jagged/jagged_dense_flash_attention/params.h: the flat problem description shared by the entry,
// the reference, cpu/ and cuda/. Raw pointers, element strides (int64), sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

// One struct for both directions. Inputs take any strides (q, v: last stride 1); outputs are
// contiguous. Forward writes out [B, T, D] and lse [B, T] (fp32); backward (grad, out, lse given)
// writes dq, dv [total_L, D], dk [B, D, T], dbias [B, S, T].
struct Params {
  bool backward = false;
  DType dtype = DType::fp32;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* bias = nullptr;
  const void* seq_offsets = nullptr;  // [B+1], int32 or int64
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t q_row = 0, v_row = 0;                   // row strides of q and v
  int64_t k_sb = 0, k_sd = 0, k_st = 0;           // k [B, D, T]
  int64_t bias_sb = 0, bias_sl = 0, bias_st = 0;  // attn_bias [B, S, T]
  // forward outputs / backward inputs
  void* out = nullptr;             // [B, T, D]
  void* lse = nullptr;             // [B, T] fp32
  int64_t out_sb = 0, out_st = 0;  // out's strides (contiguous when written)
  int64_t lse_sb = 0, lse_st = 0;
  // backward only
  const void* grad = nullptr;  // [B, T, D], last stride 1
  int64_t grad_sb = 0, grad_st = 0;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  void* dbias = nullptr;
  int64_t B = 0, T = 0, D = 0, S = 0, total_L = 0;
  int64_t max_L = 0;  // n_b = min(L_b, max_L)
  bool allow_tf32 = false;
  bool plain = false;  // reference only: the double standard's same-precision baseline
  int device_index = 0;
};

}  // namespace recops::ops::jagged_dense_flash_attention_ns
