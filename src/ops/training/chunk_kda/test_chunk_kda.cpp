// training/chunk_kda/test_chunk_kda.cpp: the C++ tests of the composed ops
// (training/common/gdn_composed_test.h: a hand-computed recurrence, stateful continuity, varlen
// equal to per-sequence runs, use_qk_l2norm_in_kernel, the workspace rule and the refusals; the
// backward (chunk_kda_bwd) by hand on one token and its refusals) run on chunk_kda
// (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/chunk_kda/chunk_kda.h"
#include "ops/training/common/gdn_composed_test.h"

namespace recops {
namespace {

struct Op {
  using Args = ChunkKdaArgs;
  using BwdArgs = ChunkKdaBwdArgs;
  using BwdOut = ChunkKdaBwdOut;
  static constexpr bool kPerChannel = true;
  static constexpr int64_t kMinChunk = 32;
  static constexpr const char* kBwd = "chunk_kda_bwd";
  static Status shape(const Args& a, Shape* o, DType* t, Shape* ht) {
    return chunk_kda_shape(a, o, t, ht);
  }
  static size_t workspace_bytes(const Args& a) { return chunk_kda_workspace_bytes(a); }
  static Status fwd(const Args& a, const TensorView& o, const TensorView* ht,
                    const Context& ctx = Context{}) {
    return chunk_kda(a, o, ht, ctx);
  }
  static Status bwd_check(const BwdArgs& a, bool* has_dh0) {
    return chunk_kda_bwd_check(a, has_dh0);
  }
  static size_t bwd_workspace_bytes(const BwdArgs& a) { return chunk_kda_bwd_workspace_bytes(a); }
  static Status bwd(const BwdArgs& a, const BwdOut& out, const Context& ctx) {
    return chunk_kda_bwd(a, out, ctx);
  }
};

TEST(ChunkKda, HandComputed) {
  gdn_composed_test::hand_computed<Op>();
}

TEST(ChunkKda, StatefulContinuity) {
  gdn_composed_test::stateful_continuity<Op>();
}

TEST(ChunkKda, VarlenEqualsSeparateRuns) {
  gdn_composed_test::varlen_equals_separate_runs<Op>();
}

TEST(ChunkKda, L2normInKernel) {
  gdn_composed_test::l2norm_in_kernel<Op>();
}

TEST(ChunkKda, Refusals) {
  gdn_composed_test::refusals<Op>();
}

TEST(ChunkKda, BwdHandComputed) {
  gdn_composed_test::bwd_hand_computed<Op>();
}

TEST(ChunkKda, BwdRefusals) {
  gdn_composed_test::bwd_refusals<Op>();
}

}  // namespace
}  // namespace recops
