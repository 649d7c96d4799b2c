// training/chunk_gated_delta_rule/test_chunk_gated_delta_rule.cpp: the C++ tests of the composed
// ops (training/common/gdn_composed_test.h: a hand-computed recurrence, stateful continuity, varlen
// equal to per-sequence runs, use_qk_l2norm_in_kernel, the workspace rule and the refusals; the
// backward (chunk_gated_delta_rule_bwd) by hand on one token and its refusals) run on
// chunk_gated_delta_rule (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"
#include "ops/training/common/gdn_composed_test.h"

namespace recops {
namespace {

struct Op {
  using Args = ChunkGatedDeltaRuleArgs;
  using BwdArgs = ChunkGatedDeltaRuleBwdArgs;
  using BwdOut = ChunkGatedDeltaRuleBwdOut;
  static constexpr bool kPerChannel = false;
  static constexpr int64_t kMinChunk = 16;
  static constexpr const char* kBwd = "chunk_gated_delta_rule_bwd";
  static Status shape(const Args& a, Shape* o, DType* t, Shape* ht) {
    return chunk_gated_delta_rule_shape(a, o, t, ht);
  }
  static size_t workspace_bytes(const Args& a) { return chunk_gated_delta_rule_workspace_bytes(a); }
  static Status fwd(const Args& a, const TensorView& o, const TensorView* ht,
                    const Context& ctx = Context{}) {
    return chunk_gated_delta_rule(a, o, ht, ctx);
  }
  static Status bwd_check(const BwdArgs& a, bool* has_dh0) {
    return chunk_gated_delta_rule_bwd_check(a, has_dh0);
  }
  static size_t bwd_workspace_bytes(const BwdArgs& a) {
    return chunk_gated_delta_rule_bwd_workspace_bytes(a);
  }
  static Status bwd(const BwdArgs& a, const BwdOut& out, const Context& ctx) {
    return chunk_gated_delta_rule_bwd(a, out, ctx);
  }
};

TEST(ChunkGatedDeltaRule, HandComputed) {
  gdn_composed_test::hand_computed<Op>();
}

TEST(ChunkGatedDeltaRule, StatefulContinuity) {
  gdn_composed_test::stateful_continuity<Op>();
}

TEST(ChunkGatedDeltaRule, VarlenEqualsSeparateRuns) {
  gdn_composed_test::varlen_equals_separate_runs<Op>();
}

TEST(ChunkGatedDeltaRule, L2normInKernel) {
  gdn_composed_test::l2norm_in_kernel<Op>();
}

TEST(ChunkGatedDeltaRule, Refusals) {
  gdn_composed_test::refusals<Op>();
}

TEST(ChunkGatedDeltaRule, BwdHandComputed) {
  gdn_composed_test::bwd_hand_computed<Op>();
}

TEST(ChunkGatedDeltaRule, BwdRefusals) {
  gdn_composed_test::bwd_refusals<Op>();
}

}  // namespace
}  // namespace recops
