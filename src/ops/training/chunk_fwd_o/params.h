// training/chunk_fwd_o/params.h: the flat problem description shared by the entry, the reference
// and cpu/.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::chunk_fwd_o_ns {

// q, k [B, T, H, K], v_new [B, T, HV, V], h [B, NT, HV, K, V], g [B, T, HV] (nullptr: no gate),
// gk [B, T, HV, K] (nullptr: none; never together with g),
// o [B, T, HV, V], all contiguous. Sequences: with seq_offsets (B = 1), sequence n is rows
// [off[n], off[n+1]) and its chunks follow those of the sequences before it in h; else sequence
// n is batch n, rows [0, T), and its chunk c is h[n, c].
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* h = nullptr;
  const void* g = nullptr;
  const void* gk = nullptr;  // [B, T, HV, K] per-channel G (KDA); nullptr: none. Never with g
  void* o = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, v_dtype = DType::fp32;
  DType h_dtype = DType::fp32, g_dtype = DType::fp32, o_dtype = DType::fp32;
  DType gk_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t NT = 0;  // h's dim 1
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool gate_log2 = false;
  bool plain = false;  // the reference only: the double standard's fp32 baseline
  int device_index = 0;
};

}  // namespace recops::ops::chunk_fwd_o_ns
