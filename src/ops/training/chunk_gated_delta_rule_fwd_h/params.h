// training/chunk_gated_delta_rule_fwd_h/params.h: the flat problem description shared by the
// entry, the reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {

// k [B, T, H, K], w [B, T, HV, K], u [B, T, HV, V], g [B, T, HV] (nullptr: no gate), gk
// [B, T, HV, K] (nullptr: no per-channel gate), h0
// [N, HV, K, V] (nullptr: zeros); outputs h [B, NT, HV, K, V], v_new [B, T, HV, V], ht
// [N, HV, K, V] fp32 (nullptr: not wanted); all contiguous. Sequences: with seq_offsets (B = 1),
// sequence n is rows [off[n], off[n+1]) and its chunks follow those of the sequences before it in
// h (h's chunks past the last sequence's are zero-filled); else sequence n is batch row n and its
// chunk c is h[n, c].
struct Params {
  const void* k = nullptr;
  const void* w = nullptr;
  const void* u = nullptr;
  const void* g = nullptr;
  const void* gk = nullptr;  // [B, T, HV, K] per-channel gate cumsum (nullptr: none)
  const void* h0 = nullptr;
  void* h = nullptr;
  void* v_new = nullptr;
  void* ht = nullptr;
  DType k_dtype = DType::fp32, w_dtype = DType::fp32, u_dtype = DType::fp32;
  DType g_dtype = DType::fp32, gk_dtype = DType::fp32, h0_dtype = DType::fp32,
        h_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t NT = 0;  // h's dim 1
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
