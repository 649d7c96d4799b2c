// training/common/gdn_composed_params.h: the problem description that the composed Gated DeltaNet
// op (chunk_gated_delta_rule) and the composed Kimi Delta Attention op (chunk_kda) share: the
// fields their entries fill (gdn_composed.h), their goldens read and their cpu/ paths compose the
// sub-ops from. Each op's params.h derives its Params from ComposedParams<its Args, its BwdOut>
// (adding what only it needs) and keeps its own workspace Layout; WorkspaceParts lays the parts
// out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "ops/training/common/packed_offsets.h"
#include "recops/dtype.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

// q, k [B, T, H, K], v [B, T, HV, V], g [B, T, HV] (GDN) or [B, T, HV, K] (KDA, per channel),
// beta [B, T, HV], h0 [N, HV, K, V] (nullptr: zeros); outputs o [B, T, HV, V], ht [N, HV, K, V]
// fp32 (nullptr: not wanted); all contiguous. Sequences: with seq_offsets (B = 1) sequence n is
// rows [off[n], off[n+1]); else batch row n. The flat fields are what the golden reads; the
// composition (cpu/, and the GDN's cuda/) composes the sub-ops from `args`, `o`, `ht` and the
// workspace.
template <class Args, class BwdOut>
struct ComposedParams {
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
  bool plain = false;    // cpu/ only: compose the sub-ops' plain baselines (host tensors)
  int device_index = 0;  // the tensors' CUDA device (cuda_sm80)
  // The backward: do [B, T, HV, V] (v's dtype), dht [N, HV, K, V] (nullptr: zeros); outputs dq,
  // dk (q's dtype), dv, dg, dbeta (their inputs' dtypes), dh0 fp32 (nullptr: not wanted).
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
  std::optional<BwdOut> out;
  // For cpu/: the call's arguments (scale resolved), outputs and scratch.
  Args args;
  TensorView o_view;
  std::optional<TensorView> ht_view;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// The workspace's parts one after another, each 256-aligned: part() gives a part's byte offset,
// `at` ends as the total. Extents may be huge next to a 0 one: their product goes through
// extent_product (0, or saturated, which the entry's workspace check then refuses).
struct WorkspaceParts {
  size_t at = 0;
  size_t part(std::initializer_list<int64_t> extents, DType t) {
    const size_t off = at;
    const int64_t elems = extent_product(extents);
    at += elems > (int64_t{1} << 56)
              ? (size_t{1} << 62)
              : (static_cast<size_t>(elems) * dtype_size(t) + 255) / 256 * 256;
    return off;
  }
};

}  // namespace recops::ops::training
