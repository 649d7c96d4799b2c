// training/chunk_scaled_dot_kkt/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {

// k [B, T, H, K], beta [B, T, HV], g [B, T, HV] (nullptr: no gate), A [B, T, HV, BT] fp32, all
// contiguous. Sequences: with seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]); else
// sequence n is batch n, rows [0, T). Chunks of BT rows start at each sequence's first row.
struct Params {
  const void* k = nullptr;
  const void* beta = nullptr;
  const void* g = nullptr;
  float* A = nullptr;
  DType k_dtype = DType::fp32, beta_dtype = DType::fp32, g_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
