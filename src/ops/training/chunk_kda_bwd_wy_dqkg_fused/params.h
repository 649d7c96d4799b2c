// training/chunk_kda_bwd_wy_dqkg_fused/params.h: the flat problem description shared by the
// entry, the reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {

// q, k [B, T, H, K]; v, v_new, do, dv2, dv [B, T, HV, V]; g, dg [B, T, HV, K]; beta, dbeta
// [B, T, HV]; Akk, dA [B, T, HV, BT]; h, dh [B, NT, HV, K, V]; dq, dk [B, T, H, K]; all
// contiguous. Sequences: with seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]) and its
// chunks follow those of the sequences before it in h and dh; else sequence n is batch n, rows
// [0, T), and its chunk c is [n, c].
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* v_new = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const void* A = nullptr;  // Akk
  const void* h = nullptr;
  const void* d_o = nullptr;
  const void* dh = nullptr;
  const void* dv2 = nullptr;
  float* dq = nullptr;
  float* dk = nullptr;
  void* dv = nullptr;
  float* dbeta = nullptr;
  float* dg = nullptr;
  float* dA = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, v_dtype = DType::fp32;
  DType vn_dtype = DType::fp32, g_dtype = DType::fp32, beta_dtype = DType::fp32;
  DType A_dtype = DType::fp32, h_dtype = DType::fp32, do_dtype = DType::fp32;
  DType dh_dtype = DType::fp32, dv2_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t NT = 0;  // h's and dh's dim 1
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
