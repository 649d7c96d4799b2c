// training/prepare_wy_repr_bwd/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {

// k (dk) [B, T, H, K], v, du (dv) [B, T, HV, V], beta (dbeta), g (dg) [B, T, HV], Ai
// [B, T, HV, BT], dw [B, T, HV, K]; all contiguous. Sequences: with seq_offsets (B = 1), sequence
// n is rows [off[n], off[n+1]); else sequence n is batch n, rows [0, T). Chunks of BT rows start
// at each sequence's first row.
struct Params {
  const void* k = nullptr;
  const void* v = nullptr;
  const void* beta = nullptr;
  const void* g = nullptr;  // nullptr: no gate (and no dg)
  const void* Ai = nullptr;
  const void* dw = nullptr;
  const void* du = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  void* dbeta = nullptr;
  float* dg = nullptr;
  DType k_dtype = DType::fp32, v_dtype = DType::fp32, beta_dtype = DType::fp32;
  DType g_dtype = DType::fp32, Ai_dtype = DType::fp32, dw_dtype = DType::fp32;
  DType du_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
