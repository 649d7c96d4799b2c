// training/recompute_w_u_fwd/test_recompute_w_u_fwd.cpp: the C++ tests of the op beyond `recops
// check`'s cases: a hand-computed chunk, the GVA head mapping with a varlen restart, every column
// of Ai's row read (the upper part too), the refusals and their messages (torch-free; built into
// tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;

// T = 2, H = HV = 1, K = 2, V = 1, chunk 16: both rows hand-computed.
TEST(RecomputeWUFwd, HandComputedChunk) {
  Tensor k = Tensor::empty({1, 2, 1, 2}, DType::fp32), v = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  Tensor beta = Tensor::empty({1, 2, 1}, DType::fp32), g = Tensor::empty({1, 2, 1}, DType::fp32);
  Tensor Ai = Tensor::empty({1, 2, 1, 16}, DType::fp32);
  Tensor w = Tensor::empty({1, 2, 1, 2}, DType::fp32), u = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  const float kv[] = {1, 2, 3, -1};
  for (int i = 0; i < 4; ++i) f32(k)[i] = kv[i];
  f32(v)[0] = 4, f32(v)[1] = -2;
  f32(beta)[0] = 0.5f, f32(beta)[1] = 0.25f;
  f32(g)[0] = -0.5f, f32(g)[1] = -1.5f;
  for (int i = 0; i < 32; ++i) f32(Ai)[i] = NAN;  // columns past the 2-row chunk: never read
  f32(Ai)[0] = 1, f32(Ai)[1] = 0;                 // row 0: [1, 0]
  f32(Ai)[16] = -0.75f, f32(Ai)[17] = 1;          // row 1: [-0.75, 1]
  RecomputeWUFwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.Ai = Ai.view(), a.g = g.view();
  ASSERT_TRUE(recompute_w_u_fwd(a, w.view(), u.view()).ok());
  const double e0 = 0.5 * std::exp(-0.5), e1 = 0.25 * std::exp(-1.5);
  EXPECT_NEAR(f32(u)[0], 0.5 * 4, 1e-6);
  EXPECT_NEAR(f32(u)[1], -0.75 * 0.5 * 4 + 0.25 * -2, 1e-6);
  EXPECT_NEAR(f32(w)[0], e0 * 1, 1e-6);
  EXPECT_NEAR(f32(w)[1], e0 * 2, 1e-6);
  EXPECT_NEAR(f32(w)[2], -0.75 * e0 * 1 + e1 * 3, 1e-6);
  EXPECT_NEAR(f32(w)[3], -0.75 * e0 * 2 + e1 * -1, 1e-6);
  // gate_log2: exp2(G); no g: no factor; u does not depend on g.
  a.gate_log2 = true;
  ASSERT_TRUE(recompute_w_u_fwd(a, w.view(), u.view()).ok());
  EXPECT_NEAR(f32(w)[2], -0.75 * 0.5 * std::exp2(-0.5) + 0.25 * std::exp2(-1.5) * 3, 1e-6);
  a.g.reset();
  ASSERT_TRUE(recompute_w_u_fwd(a, w.view(), u.view()).ok());
  EXPECT_NEAR(f32(w)[3], -0.75 * 0.5 * 2 + 0.25 * -1, 1e-6);
  EXPECT_NEAR(f32(u)[1], -0.75 * 0.5 * 4 + 0.25 * -2, 1e-6);
  // Every column of the chunk is read, the upper part too (as fla's dense product does).
  f32(Ai)[1] = 2;
  ASSERT_TRUE(recompute_w_u_fwd(a, w.view(), u.view()).ok());
  EXPECT_NEAR(f32(u)[0], 0.5 * 4 + 2 * 0.25 * -2, 1e-6);
}

// HV = 2H (value heads 0, 1 use key head 0; 2, 3 key head 1) and a sequence restart at row 2 of
// seq_offsets [0, 2, 5]: row 2 mixes rows 2.. only. Ai = all ones inside each chunk's rows.
TEST(RecomputeWUFwd, GvaHeadsAndVarlenRestart) {
  const int64_t T = 5, H = 2, HV = 4, K = 3, V = 2;
  Tensor k = Tensor::empty({1, T, H, K}, DType::fp32),
         v = Tensor::empty({1, T, HV, V}, DType::fp32);
  Tensor beta = Tensor::empty({1, T, HV}, DType::fp32),
         Ai = Tensor::empty({1, T, HV, 16}, DType::fp32);
  Tensor off = Tensor::empty({3}, DType::int32);
  Tensor w = Tensor::empty({1, T, HV, K}, DType::fp32),
         u = Tensor::empty({1, T, HV, V}, DType::fp32);
  for (int64_t i = 0; i < T * H * K; ++i) f32(k)[i] = static_cast<float>((i * 7) % 11) - 5;
  for (int64_t i = 0; i < T * HV * V; ++i) f32(v)[i] = static_cast<float>((i * 5) % 9) - 4;
  for (int64_t i = 0; i < T * HV; ++i) f32(beta)[i] = 0.1f * static_cast<float>(i + 1);
  for (int64_t i = 0; i < T * HV * 16; ++i) f32(Ai)[i] = 1;
  const int32_t ov[] = {0, 2, 5};
  for (int i = 0; i < 3; ++i) static_cast<int32_t*>(off.data())[i] = ov[i];
  RecomputeWUFwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.Ai = Ai.view(),
  a.seq_offsets = off.view();
  ASSERT_TRUE(recompute_w_u_fwd(a, w.view(), u.view()).ok());
  for (int64_t hv = 0; hv < HV; ++hv)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t lo = t < 2 ? 0 : 2, hi = t < 2 ? 2 : 5;
      for (int64_t c = 0; c < K; ++c) {
        double want = 0;
        for (int64_t j = lo; j < hi; ++j)
          want += f32(beta)[j * HV + hv] * f32(k)[(j * H + hv / 2) * K + c];
        EXPECT_NEAR(f32(w)[(t * HV + hv) * K + c], want, 1e-5) << t << " " << hv << " " << c;
      }
      for (int64_t c = 0; c < V; ++c) {
        double want = 0;
        for (int64_t j = lo; j < hi; ++j)
          want += f32(beta)[j * HV + hv] * f32(v)[(j * HV + hv) * V + c];
        EXPECT_NEAR(f32(u)[(t * HV + hv) * V + c], want, 1e-5) << t << " " << hv << " " << c;
      }
    }
}

struct Shapes {
  Shape k{1, 4, 2, 8}, v{1, 4, 2, 5}, beta{1, 4, 2}, Ai{1, 4, 2, 64}, w{1, 4, 2, 8}, u{1, 4, 2, 5};
  DType kt = DType::fp32, wt = DType::fp32;
  std::optional<int64_t> chunk_size;
};

Status call(const Shapes& s) {
  Tensor k = Tensor::empty(s.k, s.kt), v = Tensor::empty(s.v, DType::fp32);
  Tensor beta = Tensor::empty(s.beta, DType::fp32), Ai = Tensor::empty(s.Ai, DType::fp32);
  Tensor w = Tensor::empty(s.w, s.wt), u = Tensor::empty(s.u, DType::fp32);
  RecomputeWUFwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.Ai = Ai.view();
  a.chunk_size = s.chunk_size;
  return recompute_w_u_fwd(a, w.view(), u.view());
}

TEST(RecomputeWUFwd, Refusals) {
  Shapes s;
  ASSERT_TRUE(call(s).ok());
  s.v = s.u = {1, 4, 3, 5}, s.beta = {1, 4, 3}, s.Ai = {1, 4, 3, 64}, s.w = {1, 4, 3, 8};
  expect_error(call(s), "v's HV=3 must be a multiple of k's H=2");
  s = Shapes{};
  s.beta = {1, 5, 2};
  expect_error(call(s), "beta must be [B, T, HV] = [1, 4, 2]");
  s = Shapes{};
  s.Ai = {1, 4, 2, 48};
  expect_error(call(s), "Ai's last dim (the chunk size BT) must be 16, 32 or 64; got 48");
  s = Shapes{};
  s.chunk_size = 32;
  expect_error(call(s), "chunk_size=32 must equal Ai's last dim 64");
  s = Shapes{};
  s.k = {1, 4, 8};
  expect_error(call(s), "k must be [B, T, H, K]");
  s = Shapes{};
  s.kt = DType::int32;
  expect_error(call(s), "k must be [B, T, H, K] of fp64, fp32, fp16 or bf16");
  s = Shapes{};
  s.wt = DType::bf16;
  expect_error(call(s), "w must be contiguous fp32[1, 4, 2, 8]");
  s = Shapes{};
  s.u = {1, 4, 2, 6};
  expect_error(call(s), "u must be contiguous fp32[1, 4, 2, 5] (v's shape and dtype)");
}

TEST(RecomputeWUFwd, ShapesAndDtypes) {
  Tensor k = Tensor::empty({2, 7, 3, 5}, DType::bf16), v = Tensor::empty({2, 7, 6, 9}, DType::fp16);
  Tensor beta = Tensor::empty({2, 7, 6}, DType::bf16),
         Ai = Tensor::empty({2, 7, 6, 32}, DType::fp32);
  RecomputeWUFwdArgs a;
  a.k = k.view(), a.v = v.view(), a.beta = beta.view(), a.Ai = Ai.view();
  Shape ws, us;
  DType wt, ut;
  ASSERT_TRUE(recompute_w_u_fwd_shape(a, &ws, &wt, &us, &ut).ok());
  EXPECT_EQ(ws, (Shape{2, 7, 6, 5}));
  EXPECT_EQ(us, (Shape{2, 7, 6, 9}));
  EXPECT_EQ(wt, DType::bf16);
  EXPECT_EQ(ut, DType::fp16);
}

}  // namespace
}  // namespace recops
