// jagged/multi_head_jagged_flash_attention/params.h: the flat problem description shared by the
// entry, the reference, cpu/ and cuda/. Raw pointers, element strides, sizes.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

// A [H, total_L, D] operand: element (h, r, d) at data[h * hs + r * rs + d].
struct HeadRows {
  const void* data = nullptr;
  int64_t hs = 0;
  int64_t rs = 0;
};

// One struct for both directions.
//   forward:  q, k, v -> out [H, total_L, D] (dense), lse fp32 [H, total_L] (dense; may be null)
//   backward: grad, q, k, v, o (the forward's out), lse_in (fp32, head stride lse_hs, row stride
//             1) -> dq, dk, dv (dense [H, total_L, D])
struct Params {
  bool backward = false;
  HeadRows q, k, v;
  HeadRows grad, o;  // backward only
  const float* lse_in = nullptr;
  int64_t lse_hs = 0;
  void* out = nullptr;
  float* lse = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  DType dtype = DType::fp32;
  const void* seq_offsets = nullptr;  // [B+1], int32 or int64
  bool offsets_int64 = false;
  int64_t offsets_stride = 1;
  int64_t B = 0;
  int64_t H = 0;
  int64_t total_L = 0;
  int64_t D = 0;
  int64_t max_L = 0;   // n_b = min(L_b, max_L); also the divisor of p
  bool plain = false;  // reference only: the double standard's same-precision baseline
  int device_index = 0;
};

// Sequence b's rows [begin, begin + len) clamped into [0, total_L] (corrupted offsets never read
// out of bounds, jagged_ops.md §1.2) and n = min(len, max_L).
struct SeqRange {
  int64_t begin = 0;
  int64_t len = 0;
  int64_t n = 0;
};

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
