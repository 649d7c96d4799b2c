// training/chunk_loss/test_chunk_loss.cpp: the C++ tests of the op beyond `recops check`'s cases:
// refusals and their messages, the workspace bound of training_ops.md §3.2 (torch-free; built into
// tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <vector>

#include "ops/training/chunk_loss/chunk_loss.h"
#include "recops/tensor.h"

namespace recops {
namespace {

struct Inputs {
  Tensor h, w, y, loss, zl;
  Inputs(int64_t N, int64_t D, int64_t V, DType t = DType::fp32)
      : h(Tensor::empty({N, D}, t)),
        w(Tensor::empty({V, D}, t)),
        y(Tensor::empty({N}, DType::int64)),
        loss(Tensor::empty({}, DType::fp32)),
        zl(Tensor::empty({}, DType::fp32)) {
    for (int64_t i = 0; i < N; ++i) static_cast<int64_t*>(y.data())[i] = i % V;
  }
  ChunkLossArgs args() const {
    ChunkLossArgs a;
    a.hidden = h.view();
    a.weight = w.view();
    a.labels = y.view();
    return a;
  }
};

Status run(const ChunkLossArgs& a, Inputs& in) {
  std::vector<char> ws(chunk_loss_workspace_bytes(a) + 1);
  Context ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  return chunk_loss(a, in.loss.view(), in.zl.view(), ctx);
}

void expect_error(const Status& s, const char* text) {
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(ChunkLoss, RefusesMismatchedWeight) {
  Inputs in(4, 3, 5);
  Tensor w = Tensor::empty({5, 4}, DType::fp32);
  ChunkLossArgs a = in.args();
  a.weight = w.view();
  expect_error(run(a, in), "chunk_loss: weight must be contiguous [V, D] with V >= 1 and D = 3");
}

TEST(ChunkLoss, RefusesWeightOfAnotherDtype) {
  Inputs in(4, 3, 5);
  Tensor w = Tensor::empty({5, 3}, DType::bf16);
  ChunkLossArgs a = in.args();
  a.weight = w.view();
  expect_error(run(a, in), "chunk_loss: weight must have hidden's dtype");
}

TEST(ChunkLoss, RefusesLabelOutOfRange) {
  Inputs in(4, 3, 5);
  static_cast<int64_t*>(in.y.data())[2] = 5;
  expect_error(run(in.args(), in), "chunk_loss: labels[2]=5 must be in [0, V) = [0, 5)");
}

TEST(ChunkLoss, RefusesNegativeChunk) {
  Inputs in(4, 3, 5);
  ChunkLossArgs a = in.args();
  a.token_chunk = -1;
  expect_error(run(a, in), "chunk_loss: token_chunk=-1 must be >= 0");
}

TEST(ChunkLoss, RefusesAccumDtype) {
  Inputs in(4, 3, 5);
  ChunkLossArgs a = in.args();
  a.accum_dtype = DType::fp16;
  expect_error(run(a, in), "chunk_loss: accum_dtype must be None, fp32 or hidden's dtype");
}

TEST(ChunkLoss, RefusesSmallWorkspace) {
  Inputs in(4, 3, 5);
  Context ctx;
  const Status s = chunk_loss(in.args(), in.loss.view(), in.zl.view(), ctx);
  expect_error(s, "chunk_loss: the workspace must hold");
}

// chunk_loss_fwd: the gradients exactly when the reduction lets the forward know them.
TEST(ChunkLoss, FwdGradientsFollowTheReduction) {
  Inputs in(4, 3, 5);
  Tensor dh = Tensor::empty({4, 3}, DType::fp32), dw = Tensor::empty({5, 3}, DType::fp32);
  Tensor none_loss = Tensor::empty({4}, DType::fp32), none_z = Tensor::empty({4}, DType::fp32);
  ChunkLossArgs a = in.args();
  std::vector<char> ws(chunk_loss_fwd_workspace_bytes(a));
  Context ctx;
  ctx.workspace = ws.data();
  ctx.workspace_bytes = ws.size();
  for (int64_t i = 0; i < 12; ++i)
    static_cast<float*>(in.h.data())[i] = 0.1f * static_cast<float>(i);
  for (int64_t i = 0; i < 15; ++i)
    static_cast<float*>(in.w.data())[i] = 0.05f * static_cast<float>(i % 7);
  // "mean" (the default): d_hidden and d_weight required, d_bias only with a bias.
  expect_error(chunk_loss_fwd(a, in.loss.view(), in.zl.view(), nullptr, nullptr, nullptr, ctx),
               "chunk_loss_fwd: d_hidden and d_weight must be given exactly when reduction is sum "
               "or mean");
  expect_error(
      chunk_loss_fwd(a, in.loss.view(), in.zl.view(), &dh.view(), &dw.view(), &dw.view(), ctx),
      "chunk_loss_fwd: d_bias must be given exactly when bias is given");
  ASSERT_TRUE(
      chunk_loss_fwd(a, in.loss.view(), in.zl.view(), &dh.view(), &dw.view(), nullptr, ctx).ok());
  // "none": no gradients (the backward recomputes them with each row's upstream gradient).
  a.reduction = CeReduction::none;
  expect_error(
      chunk_loss_fwd(a, none_loss.view(), none_z.view(), &dh.view(), &dw.view(), nullptr, ctx),
      "chunk_loss_fwd: d_hidden and d_weight must be given exactly when reduction is sum "
      "or mean");
  EXPECT_TRUE(
      chunk_loss_fwd(a, none_loss.view(), none_z.view(), nullptr, nullptr, nullptr, ctx).ok());
}

// §3.2: the logit tiles stay within max(N·D·sizeof(hidden), 64 MiB) at the benchmark shape, and
// the token chunk is a multiple of 64.
TEST(ChunkLoss, PlanKeepsTheBudget) {
  ChunkLossArgs a;
  a.hidden.dtype = a.weight.dtype = DType::bf16;
  a.hidden.ndim = a.weight.ndim = 2;
  a.hidden.sizes[0] = 16384;
  a.hidden.sizes[1] = a.weight.sizes[1] = 4096;
  a.weight.sizes[0] = 131072;
  ChunkLossPlan plan;
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Vc, 131072);
  EXPECT_GT(plan.Nc, 0);
  EXPECT_EQ(plan.Nc % 64, 0);
  // The CPU forward's tiles: the fp32 Z tile and the fp32 hidden chunk.
  EXPECT_LE(plan.Nc * plan.Vc * 4 + plan.Nc * 4096 * 4, int64_t{16384} * 4096 * 2);
  EXPECT_GT((plan.Nc + 64) * plan.Vc * 4 + (plan.Nc + 64) * 4096 * 4, int64_t{16384} * 4096 * 2);
  // With gradients also the fp32 dh accumulator (G is written over Z: no tile of its own).
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_LE(plan.Nc * plan.Vc * 4 + 2 * plan.Nc * 4096 * 4, int64_t{16384} * 4096 * 2);
  EXPECT_GT((plan.Nc + 64) * plan.Vc * 4 + 2 * (plan.Nc + 64) * 4096 * 4,
            int64_t{16384} * 4096 * 2);
  // The workspace holds those tiles (and the per-row values), nothing more.
  const int64_t rows_bytes = int64_t{4} * 16384 * 4;
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_LE(static_cast<int64_t>(chunk_loss_workspace_bytes(a)),
            rows_bytes + plan.Nc * plan.Vc * 4 + plan.Nc * 4096 * 4 + 3 * 256);
}

// On CUDA the gradients' chunks live in d_weight until its final cast (fp32 accumulation): 1024
// rows at the benchmark shape and a workspace of the fp32 dW accumulator alone; the forward alone
// takes 1024 rows and vocab tiles whose Z fits the budget, and so does accum_dtype = input (Z and
// the dh accumulator).
// The plan and the workspace functions read no data, so this runs without a GPU.
TEST(ChunkLoss, CudaPlanPutsTheChunksInDWeight) {
  ChunkLossArgs a;
  a.hidden.dtype = a.weight.dtype = DType::bf16;
  a.hidden.ndim = a.weight.ndim = 2;
  a.hidden.device = a.weight.device = Device::cuda(0);
  a.hidden.sizes[0] = 16384;
  a.hidden.sizes[1] = a.weight.sizes[1] = 4096;
  a.weight.sizes[0] = 131072;
  a.reduction = CeReduction::mean;
  ChunkLossPlan plan;
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, 1024);
  const size_t dwacc = size_t{131072} * 4096 * 4;
  EXPECT_EQ(chunk_loss_fwd_workspace_bytes(a), dwacc);
  ChunkLossBwdArgs b;
  static_cast<ChunkLossArgs&>(b) = a;
  EXPECT_EQ(chunk_loss_bwd_workspace_bytes(b), dwacc);
  // The forward alone: 1024 rows, V cut into tiles whose Z fits the budget N·D·s (4 of 32768).
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Nc, 1024);
  EXPECT_EQ(plan.Vc, 32768);
  a.weight.sizes[0] = 256000;  // 8 equal tiles of 32000 (a multiple of 256)
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Nc, 1024);
  EXPECT_EQ(plan.Vc, 32000);
  EXPECT_LE(plan.Nc * plan.Vc * 4, int64_t{16384} * 4096 * 2);
  a.vocab_chunk = 50000;  // given: kept, and the rows from the budget
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Vc, 50000);
  EXPECT_EQ(plan.Nc, int64_t{16384} * 4096 * 2 / (50000 * 4) / 64 * 64);
  a.vocab_chunk = 0;
  a.hidden.sizes[0] = 700;  // 700 rows' Z over V = 256000 exceeds 64 MiB: one chunk, tiles
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Nc, 700);
  EXPECT_LE(plan.Nc * plan.Vc * 4, int64_t{64} << 20);
  EXPECT_EQ(plan.Vc % 256, 0);
  a.hidden.sizes[0] = 16384;
  a.weight.sizes[0] = 1000;  // Z over all of V fits: the budget's rows, no tiles
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Vc, 1000);
  EXPECT_EQ(plan.Nc, 16384);
  a.weight.sizes[0] = 131072;
  // reduction "none": chunk_loss_fwd runs the forward alone, with its workspace.
  a.reduction = CeReduction::none;
  EXPECT_EQ(chunk_loss_fwd_workspace_bytes(a), chunk_loss_workspace_bytes(a));
  // accum_dtype = input: 1024 rows, V cut into equal tiles whose Z (G in place) and the rows' fp32
  // dh accumulator fit the budget: (Vc + D)·4 bytes a row, Vc <= 32768 - 4096 = 28672, so 5 tiles
  // of 26368 (131072 / 5 rounded up to 256); the workspace the row values, that tile, dh and db.
  a.accum_dtype = DType::bf16;
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, 1024);
  EXPECT_EQ(plan.Vc, 26368);
  a.reduction = CeReduction::mean;
  EXPECT_EQ(chunk_loss_fwd_workspace_bytes(a), size_t{4} * 16384 * 4 + size_t{1024} * 26368 * 4 +
                                                   size_t{1024} * 4096 * 4 + 131072 * 4);
  EXPECT_LE(chunk_loss_fwd_workspace_bytes(a) - size_t{4} * 16384 * 4 - 131072 * 4,
            size_t{16384} * 4096 * 2);
  a.weight.sizes[0] = 256000;  // 9 tiles of 28672 (256000 / 9 = 28445 rounded up to 256)
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, 1024);
  EXPECT_EQ(plan.Vc, 28672);
  a.weight.sizes[0] = 131072;
  a.hidden.sizes[0] = 200;  // 200 rows' Z over V (100 MiB) exceeds 64 MiB: one chunk, 2 tiles
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, 200);
  EXPECT_EQ(plan.Vc, 65536);
  a.hidden.sizes[0] = 100;  // 100 rows' Z (50 MiB) fits: one tile, the budget's rows
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, 100);
  EXPECT_EQ(plan.Vc, 131072);
  a.hidden.sizes[0] = 16384;
  a.vocab_chunk = 32768;  // vocab tiles given: the rows from the budget, the dh accumulator too
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, int64_t{16384} * 4096 * 2 / ((32768 + 4096) * 4) / 64 * 64);
  a.vocab_chunk = 0;
  // D too small for 64 rows in d_weight: the budget's rule.
  a.accum_dtype.reset();
  a.hidden.sizes[1] = a.weight.sizes[1] = 16;
  ASSERT_TRUE(chunk_loss_plan(a, &plan, /*grads=*/true).ok());
  EXPECT_EQ(plan.Nc, int64_t{64} * 1024 * 1024 / (131072 * 4) / 64 * 64);
}

// The plan reads no data, so it answers any sizes: N·D·s and the per-row bytes of a huge V and D
// saturate instead of overflowing int64 (UBSan found this through the workspace function:
// tests/fuzz/corpus/fuzz_training2_entries/found_chunk_loss_plan_overflow).
TEST(ChunkLoss, PlanSaturatesHugeSizes) {
  ChunkLossArgs a;
  a.hidden.dtype = a.weight.dtype = DType::fp32;
  a.hidden.ndim = a.weight.ndim = 2;
  a.hidden.sizes[0] = int64_t{1} << 40;
  a.hidden.sizes[1] = a.weight.sizes[1] = int64_t{1} << 40;
  a.weight.sizes[0] = int64_t{1} << 62;
  ChunkLossPlan plan;
  ASSERT_TRUE(chunk_loss_plan(a, &plan).ok());
  EXPECT_EQ(plan.Vc, int64_t{1} << 62);
  EXPECT_EQ(plan.Nc, 1);
  // A weight whose D is not hidden's (an empty [2^62, 0]): no plan, no workspace, and the entry
  // names the rule.
  Inputs in(4, 3, 5);
  ChunkLossArgs b = in.args();
  b.weight = TensorView(in.w.data(), DType::fp32, Device::cpu(), {int64_t{1} << 62, 0});
  EXPECT_FALSE(chunk_loss_plan(b, &plan).ok());
  EXPECT_EQ(chunk_loss_workspace_bytes(b), 0u);
  expect_error(run(b, in), "chunk_loss: weight must be contiguous [V, D] with V >= 1 and D = 3");
}

}  // namespace
}  // namespace recops
