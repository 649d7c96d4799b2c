// training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h: the C++ API (torch-free)
// of chunk_gated_delta_rule_fwd_h (training_ops.md §4.3, the GDN sub-op; fla-core's
// fla.ops.common.chunk_delta_h.chunk_gated_delta_rule_fwd_h). The Args struct is the argument
// table's struct. Forward only, as fla's.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter). Per sequence and value head hv (key head h = hv / (HV / H)), with the fp32
// state S [K, V] starting at initial_state (or 0), for the chunks c in time order (L the chunk's
// last position):
//   h[c, hv] = S                                    (the state before the chunk)
//   v_new[t, hv] = u[t, hv] − w[t, hv]ᵀ S           (t in the chunk; unscaled)
//   S ← exp(G_L)·S + Σ_t exp(G_L − G_t)·k[t, h] ⊗ v_new[t, hv]
// (exp2 with gate_log2; the factors are 1 without G); final_state = S after the last chunk.
// With gk (KDA's per-channel gate cumsum; fla's USE_GK) the state's rows also decay per channel:
//   S ← diag(exp(gk_L))·(exp(G_L)·S) + Σ_t exp(G_L − G_t)·k[t, h] ⊗ v_new[t, hv]
// (k gets no per-t factor from gk: the caller passes k already gated, KDA's kg = k⊙exp(gk_L − gk)).
// Chunk numbering of h: without seq_offsets chunk c of batch row b is h[b, c] (NT = ceil(T / BT));
// with seq_offsets (B = 1) the chunks of all sequences in order, sequence by sequence (zero-length
// sequences own none): chunk c of sequence n is h[0, Σ_{m<n} ceil(len_m / BT) + c]; chunks past the
// last one (NT is the sync-free bound ceil(T / BT) + N unless num_chunks is given) are zero.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkGatedDeltaRuleFwdHArgs {
  TensorView k;                  // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView w;                  // [B, T, HV, K], HV % H == 0
  TensorView u;                  // [B, T, HV, V]
  std::optional<TensorView> g;   // G: [B, T, HV], the chunk-local gate cumsum
  std::optional<TensorView> gk;  // [B, T, HV, K]: KDA's per-channel chunk-local gate cumsum
  std::optional<TensorView> initial_state;  // [N, HV, K, V] (fp32 normally; any float)
  bool output_final_state = false;          // also return final_state [N, HV, K, V] fp32
  std::optional<TensorView> seq_offsets;    // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                  // BT: 16, 32 or 64
  bool gate_log2 = false;                   // G in log2 units: exp2 instead of exp
  std::optional<int64_t> num_chunks;        // h's NT (with seq_offsets; >= the chunk count)
  bool fp32_chunk_states = false;           // h in fp32 instead of k's dtype
};

struct ChunkGatedDeltaRuleFwdHShapes {
  Shape h, v_new, final_state;  // final_state: {0} when not wanted
  DType h_dtype = DType::fp32, v_new_dtype = DType::fp32;
};
// h: [B, NT, HV, K, V] in k's dtype (fp32 with fp32_chunk_states); v_new: u's shape and dtype;
// final_state: [N, HV, K, V] fp32, or absent (nullptr; {0} in the shapes).
Status chunk_gated_delta_rule_fwd_h_shape(const ChunkGatedDeltaRuleFwdHArgs& a,
                                          ChunkGatedDeltaRuleFwdHShapes* out);
Status chunk_gated_delta_rule_fwd_h(const ChunkGatedDeltaRuleFwdHArgs& a, const TensorView& h,
                                    const TensorView& v_new, const TensorView* final_state,
                                    const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 k) with h and v_new stored in their dtypes and used from
// there, as a framework composition (and fla's kernel) rounds them.
Status chunk_gated_delta_rule_fwd_h_plain(const ChunkGatedDeltaRuleFwdHArgs& a, const TensorView& h,
                                          const TensorView& v_new, const TensorView* final_state);

}  // namespace recops
