// training/chunk_kda_bwd_dav/params.h: the flat problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_kda_bwd_dav_ns {

// v_new, do, dv [B, T, HV, V]; Aqk, dAqk [B, T, HV, BT]; all contiguous. Sequences: with
// seq_offsets (B = 1), sequence n is rows [off[n], off[n+1]); else sequence n is batch row n,
// rows [0, T). Each sequence is cut into chunks of BT rows from its own start.
struct Params {
  const void* v_new = nullptr;
  const void* d_o = nullptr;
  const void* Aqk = nullptr;
  float* dAqk = nullptr;
  void* dv = nullptr;
  DType vn_dtype = DType::fp32, do_dtype = DType::fp32, A_dtype = DType::fp32;
  int64_t B = 0, T = 0, HV = 0, V = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
