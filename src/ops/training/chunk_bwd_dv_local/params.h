// training/chunk_bwd_dv_local/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_bwd_dv_local_ns {

// q, k [B, T, H, K], do [B, T, HV, V], g [B, T, HV] (nullptr: no gate), dv [B, T, HV, V], all
// contiguous. Sequences: with seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]); else
// sequence n is batch row n, rows [0, T).
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* g = nullptr;
  const void* dout = nullptr;  // do
  void* dv = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, g_dtype = DType::fp32;
  DType do_dtype = DType::fp32, dv_dtype = DType::fp32;
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

}  // namespace recops::ops::chunk_bwd_dv_local_ns
