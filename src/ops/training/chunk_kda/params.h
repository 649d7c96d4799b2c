// training/chunk_kda/params.h: the problem description shared by the entry, the
// reference and cpu/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "ops/training/chunk_kda/chunk_kda.h"
#include "recops/dtype.h"

namespace recops::ops::chunk_kda_ns {

// q, k [B, T, H, K], v [B, T, HV, V], g [B, T, HV, K], beta [B, T, HV], h0 [N, HV, K, V]
// (nullptr: zeros);
// outputs o [B, T, HV, V], ht [N, HV, K, V] fp32 (nullptr: not wanted); all contiguous.
// Sequences: with seq_offsets (B = 1) sequence n is rows [off[n], off[n+1]); else batch row n.
// The flat fields are what the reference reads; cpu/ composes the sub-ops from `args`, `o`, `ht`
// and the workspace.
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
  DType off_dtype = DType::int64;
  double scale = 1.0;
  bool l2norm = false;  // use_qk_l2norm_in_kernel
  double l2norm_eps = 1e-6;
  bool plain = false;  // cpu/ only: compose the sub-ops' plain baselines (host tensors)
  // The backward (chunk_kda_bwd): do [B, T, HV, V] (v's dtype), dht [N, HV, K, V]
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
  std::optional<ChunkKdaBwdOut> out;
  // For cpu/: the call's arguments (scale resolved), outputs and scratch.
  ChunkKdaArgs args;
  TensorView o_view;
  std::optional<TensorView> ht_view;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The workspace's parts: byte offsets (256-aligned) of each intermediate; `total` the size.
struct Layout {
  // The forward's: the normalised q, k (l2norm only), G fp32, chunk_kda_fwd_intra's w, u, qg, kg,
  // Aqk, Akk, and fwd_h's h and v_new.
  size_t qn = 0, kn = 0, G = 0, w = 0, u = 0, qg = 0, kg = 0, Aqk = 0, Akk = 0, h = 0, v_new = 0;
  // The backward's: chunk_kda_bwd_dav's dAqk and dv, bwd_dhu's dh and dv2, the fused wy op's dq1,
  // dk1, dbeta1, dG1 and dAkk, chunk_kda_bwd_intra's dq2, dk2, dbeta2, dG2 (all fp32 but the dv
  // and dh), and the dq, dk of the normalised q and k in their dtypes (l2norm only).
  size_t dAqk = 0, dv_local = 0, dh = 0, dv2 = 0, dq1 = 0, dk1 = 0, dbeta1 = 0, dG1 = 0, dAkk = 0,
         dq2 = 0, dk2 = 0, dbeta2 = 0, dG2 = 0, dqn = 0, dkn = 0;
  size_t total = 0;
};
Layout workspace_layout(const Params& p);

}  // namespace recops::ops::chunk_kda_ns
