// training/chunk_gated_delta_rule/params.h: the problem description shared by the entry, the
// reference, compose.cpp, cpu/ and cuda/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"
#include "recops/dtype.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

// q, k [B, T, H, K], v [B, T, HV, V], g, beta [B, T, HV], h0 [N, HV, K, V] (nullptr: zeros);
// outputs o [B, T, HV, V], ht [N, HV, K, V] fp32 (nullptr: not wanted); all contiguous.
// Sequences: with seq_offsets (B = 1) sequence n is rows [off[n], off[n+1]); else batch row n.
// The flat fields are what the reference reads; compose.cpp (cpu/ and cuda/) composes the sub-ops
// from `args`, `o`, `ht` and the workspace.
struct Params {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* g = nullptr;
  const void* beta = nullptr;
  const void* h0 = nullptr;
  void* o = nullptr;
  void* ht = nullptr;
  DType q_dtype = DType::fp32, k_dtype = DType::fp32, v_dtype = DType::fp32;
  DType g_dtype = DType::fp32, beta_dtype = DType::fp32, h0_dtype = DType::fp32;
  DType o_dtype = DType::fp32;
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0;
  int64_t BT = 64;
  int64_t N = 0;                      // sequences
  int64_t NT = 0;                     // the chunk states' dim 1 (in the workspace)
  const void* seq_offsets = nullptr;  // [N+1], off_dtype; nullptr: one sequence per batch row
  int device_index = 0;               // the tensors' CUDA device (cuda_sm80)
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool l2norm = false;  // use_qk_l2norm_in_kernel
  double l2norm_eps = 1e-6;
  bool plain = false;  // cpu/ only: compose the sub-ops' plain baselines (host tensors)
  // The backward (chunk_gated_delta_rule_bwd): do [B, T, HV, V] (v's dtype), dht [N, HV, K, V]
  // (nullptr: zeros); outputs dq, dk (q's dtype), dv, dg, dbeta (their inputs' dtypes), dh0 fp32
  // (nullptr: not wanted).
  bool bwd = false;
  const void* d_o = nullptr;
  const void* dht = nullptr;
  DType dht_dtype = DType::fp32;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  void* dg = nullptr;
  void* dbeta = nullptr;
  void* dh0 = nullptr;
  std::optional<TensorView> dht_view;
  std::optional<ChunkGatedDeltaRuleBwdOut> out;
  // For cpu/: the call's arguments (scale resolved), outputs and scratch.
  ChunkGatedDeltaRuleArgs args;
  TensorView o_view;
  std::optional<TensorView> ht_view;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The workspace's parts: byte offsets (256-aligned) of each intermediate; `total` the size.
struct Layout {
  size_t qn = 0, kn = 0, G = 0, A = 0, Ai = 0, w = 0, u = 0, h = 0, v_new = 0;
  // The backward's: dv_local, dh, dv2, dw (per value head), dG, dG2 (fp32), dq and dk of the
  // normalised q and k (l2norm only), dk2 (prepare_wy_repr_bwd's dk, k's dtype).
  size_t dv_local = 0, dh = 0, dv2 = 0, dw = 0, dG = 0, dG2 = 0, dqn = 0, dkn = 0, dk2 = 0;
  size_t total = 0;
};
Layout workspace_layout(const Params& p);

}  // namespace recops::ops::chunk_gated_delta_rule_ns
