// training/chunk_kda_bwd_intra/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_kda_bwd_intra_ns {

// q, k, dq_in, dk_in, dq, dk [B, T, H, K]; g, dg_in, dg [B, T, HV, K]; beta, dbeta_in, dbeta
// [B, T, HV]; dAqk, dAkk [B, T, HV, BT]; all contiguous. Sequences: with seq_offsets (B = 1),
// sequence n is rows [off[n], off[n+1]); else sequence n is batch row n, rows [0, T). Each
// sequence is cut into chunks of BT rows from its own start.
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const void* dAqk = nullptr;
  const void* dAkk = nullptr;
  const void* dq_in = nullptr;
  const void* dk_in = nullptr;
  const void* dbeta_in = nullptr;
  const void* dg_in = nullptr;
  float* dq = nullptr;
  float* dk = nullptr;
  float* dbeta = nullptr;
  float* dg = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, g_dtype = DType::fp32;
  DType beta_dtype = DType::fp32, dAqk_dtype = DType::fp32, dAkk_dtype = DType::fp32;
  DType dq_dtype = DType::fp32, dk_dtype = DType::fp32, dbeta_dtype = DType::fp32;
  DType dg_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_kda_bwd_intra_ns
