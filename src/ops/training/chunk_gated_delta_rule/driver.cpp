// training/chunk_gated_delta_rule/driver.cpp: the `recops` CLI's driver of chunk_gated_delta_rule
// and chunk_gated_delta_rule_bwd:
// training_args::ComposedDriver (common/gdn_composed_driver.h, shared with chunk_kda) with
// chunk_gated_delta_rule's types and API.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (v's width, default
// 64), chunk_size (default 64), gva (HV / H, default 1), gate_scale (default 1: g =
// logsigmoid(U(−1, 1))·gate_scale; half_zero_gates: every other g set to 0, §5's "half the gates
// zeroed"), gate_dtype (g's dtype: fp32 by default, or `same`: the case's),
// l2norm (use_qk_l2norm_in_kernel; q and k are then raw U(−1, 1)·2), scale (absent: the op's
// default K^-1/2), initial_state (default true: h0 ~ U(−1, 1) fp32), final_state (default true:
// output_final_state), T (with lengths/offsets: q's T instead of the offsets' total, for a
// mismatch case). The backward's extra inputs, first: grad_o ~ U(−1, 1) in the case's dtype and
// grad_final_state ~ U(−1, 1) fp32 (with final_state); its outputs dq, dk, dv, dg, dbeta and dh0
// (with initial_state).
// The inputs follow fla's conditioning (training_ops.md §5): q and k rows l2-normalised (without
// l2norm), v ~ U(−1, 1), beta = sigmoid(U(−1, 1)), all in the case's dtype.
#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"
#include "ops/training/common/gdn_composed_driver.h"

namespace recops::cli {
namespace {

struct DriverOp {
  using Args = ChunkGatedDeltaRuleArgs;
  using BwdArgs = ChunkGatedDeltaRuleBwdArgs;
  using BwdOut = ChunkGatedDeltaRuleBwdOut;
  static constexpr const char* kOp = "chunk_gated_delta_rule";
  static constexpr const char* kBwd = "chunk_gated_delta_rule_bwd";
  static constexpr const char* kFolder = "training/chunk_gated_delta_rule";
  static constexpr bool kGatePerChannel = false;
  static constexpr auto forward = &chunk_gated_delta_rule;
  static constexpr auto forward_workspace_bytes = &chunk_gated_delta_rule_workspace_bytes;
  static constexpr auto forward_plain = &chunk_gated_delta_rule_plain;
  static constexpr auto backward = &chunk_gated_delta_rule_bwd;
  static constexpr auto backward_workspace_bytes = &chunk_gated_delta_rule_bwd_workspace_bytes;
  static constexpr auto backward_plain = &chunk_gated_delta_rule_bwd_plain;
};

class ChunkGatedDeltaRuleDriver final : public training_args::ComposedDriver<DriverOp> {};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkGatedDeltaRuleDriver);

}  // namespace recops::cli
