// training/recompute_w_u_fwd/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::recompute_w_u_fwd_ns {

// k [B, T, H, K], v [B, T, HV, V], beta [B, T, HV], Ai [B, T, HV, BT], g [B, T, HV] (nullptr: no
// gate), w [B, T, HV, K], u [B, T, HV, V], all contiguous. Sequences: with seq_offsets (B = 1),
// sequence n is rows [off[n], off[n+1]); else sequence n is batch n, rows [0, T). Chunks of BT
// rows start at each sequence's first row.
struct Params {
  const void* k = nullptr;
  const void* v = nullptr;
  const void* beta = nullptr;
  const void* Ai = nullptr;
  const void* g = nullptr;
  void* w = nullptr;
  void* u = nullptr;
  DType k_dtype = DType::fp32, v_dtype = DType::fp32, beta_dtype = DType::fp32;
  DType Ai_dtype = DType::fp32, g_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::recompute_w_u_fwd_ns
