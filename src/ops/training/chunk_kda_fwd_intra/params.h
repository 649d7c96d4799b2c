// training/chunk_kda_fwd_intra/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_kda_fwd_intra_ns {

// q, k [B, T, H, K], v [B, T, HV, V], g [B, T, HV, K] (G, the chunk-local cumsum), beta
// [B, T, HV]; w, qg, kg [B, T, HV, K], u [B, T, HV, V], Aqk, Akk [B, T, HV, BT], all contiguous.
// Sequences: with seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]); else sequence n is
// batch n, rows [0, T). Chunks of BT rows start at each sequence's first row.
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  void* w = nullptr;
  void* u = nullptr;
  void* qg = nullptr;
  void* kg = nullptr;
  void* Aqk = nullptr;
  void* Akk = nullptr;  // fp32
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, v_dtype = DType::fp32;
  DType g_dtype = DType::fp32, beta_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_kda_fwd_intra_ns
