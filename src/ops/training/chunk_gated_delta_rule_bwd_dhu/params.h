// training/chunk_gated_delta_rule_bwd_dhu/params.h: the flat problem description shared by the
// entry, the reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {

// q, k [B, T, H, K], w [B, T, HV, K], do, dv_local, dv2 [B, T, HV, V], g [B, T, HV] (nullptr: no
// gate), gk [B, T, HV, K] (nullptr: no per-channel gate; only its chunks' last rows are read), dht,
// dh0 [N, HV, K, V] (nullptr: absent), dh [B, NT, HV, K, V]; all contiguous. Sequences: with
// seq_offsets (B = 1) sequence n is rows [off[n], off[n+1]) and its chunks follow those of the
// sequences before it in dh; else sequence n is batch n and its chunk c is dh[n, c].
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* w = nullptr;
  const void* do_ = nullptr;
  const void* dv = nullptr;  // dv_local
  const void* g = nullptr;
  const void* gk = nullptr;
  const void* dht = nullptr;
  void* dh = nullptr;
  void* dh0 = nullptr;  // fp32
  void* dv2 = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, w_dtype = DType::fp32;
  DType do_dtype = DType::fp32, dv_dtype = DType::fp32, g_dtype = DType::fp32;
  DType gk_dtype = DType::fp32;
  DType dht_dtype = DType::fp32, dh_dtype = DType::fp32, dv2_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t NT = 0;  // dh's dim 1
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
