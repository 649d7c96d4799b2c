// training/chunk_gated_delta_rule_bwd_dhu/test_chunk_gated_delta_rule_bwd_dhu.cpp: the C++ tests
// of the op beyond `recops check`'s cases: a hand-computed two-chunk recurrence (K = V = 1), the
// varlen chunk numbering of dh with its spare chunks zeroed, dh0 = dht for a zero-length sequence,
// the refusals and their messages, a hand-computed recurrence with gk (KDA's per-channel gate;
// K = 2) and gk's refusals (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::f32;

Tensor full(const Shape& s, float x) {
  Tensor t = Tensor::empty(s, DType::fp32);
  for (int64_t i = 0; i < t.view().numel(); ++i) f32(t)[i] = x;
  return t;
}

bool has(const Status& s, const char* text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

// T = 17, chunk 16 (chunks [0, 16) and [16, 17)), H = HV = K = V = 1, q = k = do = 1, w = c,
// dv_local = 0.25, dht = d, scale 1, G_t = −0.1·(t + 1) in chunk 0 and G_16 = −0.5.
TEST(ChunkGatedDeltaRuleBwdDhu, HandComputedTwoChunks) {
  const float c = 0.03f, d = 0.7f;
  Tensor q = full({1, 17, 1, 1}, 1), k = full({1, 17, 1, 1}, 1), w = full({1, 17, 1, 1}, c);
  Tensor dout = full({1, 17, 1, 1}, 1), dv = full({1, 17, 1, 1}, 0.25f);
  Tensor g = Tensor::empty({1, 17, 1}, DType::fp32), dht = full({1, 1, 1, 1}, d);
  for (int t = 0; t < 16; ++t) f32(g)[t] = -0.1f * static_cast<float>(t + 1);
  f32(g)[16] = -0.5f;
  Tensor h0 = full({1, 1, 1, 1}, 5), dh = full({1, 2, 1, 1, 1}, NAN);
  Tensor dh0 = full({1, 1, 1, 1}, NAN), dv2 = full({1, 17, 1, 1}, NAN);
  ChunkGatedDeltaRuleBwdDhuArgs a;
  a.q = q.view(), a.k = k.view(), a.w = w.view(), a.do_ = dout.view(), a.dv_local = dv.view();
  a.g = g.view(), a.h0 = h0.view(), a.dht = dht.view();
  a.scale = 1.0;
  a.chunk_size = 16;
  const TensorView dh0v = dh0.view();
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  // Chunk 1 (L = 16, G_L = −0.5): dh[1] = d; dv2_16 = 0.25 + e^0·d; dS = e^{−0.5}·d +
  // e^{−0.5}·1·1 − c·dv2_16.
  const double d2_16 = 0.25 + d;
  const double s1 = std::exp(-0.5) * d + std::exp(-0.5) - c * d2_16;
  EXPECT_NEAR(f32(dh)[1], d, 1e-6);
  EXPECT_NEAR(f32(dv2)[16], d2_16, 1e-6);
  EXPECT_NEAR(f32(dh)[0], s1, 1e-6);
  // Chunk 0 (L = 15, G_L = −1.6): dv2_t = 0.25 + e^{G_L − G_t}·s1; dS = e^{G_L}·s1 + Σ e^{G_t}
  // − c·Σ dv2_t.
  double s0 = std::exp(-1.6) * s1;
  for (int t = 0; t < 16; ++t) {
    const double gt = -0.1 * (t + 1);
    const double d2 = 0.25 + std::exp(-1.6 - gt) * s1;
    EXPECT_NEAR(f32(dv2)[t], d2, 1e-6) << t;
    s0 += std::exp(gt) - c * d2;
  }
  EXPECT_NEAR(f32(dh0)[0], s0, 1e-5);
  // Without g and dht: dv2_16 = 0.25, dh[1] = 0, dh[0] = 1 − 0.25c (default scale K^-1/2 = 1).
  a.g.reset(), a.dht.reset(), a.scale.reset();
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  EXPECT_EQ(f32(dh)[1], 0.0f);
  EXPECT_NEAR(f32(dh)[0], 1 - 0.25 * c, 1e-6);
  // gate_log2: exp2 of the same G.
  a.g = g.view(), a.dht = dht.view(), a.scale = 1.0, a.gate_log2 = true;
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  EXPECT_NEAR(f32(dh)[0], std::exp2(-0.5) * d + std::exp2(-0.5) - c * d2_16, 1e-6);
}

// Packed sequences [0, 20), [20, 20) (empty), [20, 23), chunk 16: dh's chunks are sequence 0's
// two, then sequence 2's one (dh[0, 2]); NT = ceil(23/16) + 3 = 5, dh[0, 3..4] are 0; the empty
// sequence's dh0 is its dht; dh[0, last chunk of a sequence] = that sequence's dht.
TEST(ChunkGatedDeltaRuleBwdDhu, VarlenChunkNumbering) {
  const int64_t T = 23, K = 2, V = 3;
  Tensor q = full({1, T, 1, K}, 0.5f), k = full({1, T, 1, K}, -0.25f);
  Tensor w = full({1, T, 1, K}, 0.01f), dout = full({1, T, 1, V}, 0.3f);
  Tensor dv = full({1, T, 1, V}, 0.1f), h0 = full({3, 1, K, V}, 0);
  Tensor dht = Tensor::empty({3, 1, K, V}, DType::fp32);
  for (int64_t i = 0; i < 3 * K * V; ++i) f32(dht)[i] = static_cast<float>(i) / 7 - 1;
  Tensor off = Tensor::empty({4}, DType::int64);
  const int64_t ov[] = {0, 20, 20, 23};
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  Tensor dh = full({1, 5, 1, K, V}, NAN), dh0 = full({3, 1, K, V}, NAN),
         dv2 = full({1, T, 1, V}, NAN);
  ChunkGatedDeltaRuleBwdDhuArgs a;
  a.q = q.view(), a.k = k.view(), a.w = w.view(), a.do_ = dout.view(), a.dv_local = dv.view();
  a.h0 = h0.view(), a.dht = dht.view(), a.seq_offsets = off.view();
  a.chunk_size = 16;
  ChunkGatedDeltaRuleBwdDhuShapes s;
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu_shape(a, &s).ok());
  EXPECT_EQ(s.dh, (Shape{1, 5, 1, K, V}));
  EXPECT_TRUE(s.has_dh0);
  const TensorView dh0v = dh0.view();
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  const int64_t kv = K * V;
  for (int64_t e = 0; e < kv; ++e) {
    EXPECT_EQ(f32(dh)[1 * kv + e], f32(dht)[0 * kv + e]) << e;   // sequence 0's last chunk
    EXPECT_EQ(f32(dh)[2 * kv + e], f32(dht)[2 * kv + e]) << e;   // sequence 2's only chunk
    EXPECT_EQ(f32(dh0)[1 * kv + e], f32(dht)[1 * kv + e]) << e;  // the empty sequence
    EXPECT_EQ(f32(dh)[3 * kv + e], 0.0f);
    EXPECT_EQ(f32(dh)[4 * kv + e], 0.0f);
  }
  for (int64_t i = 0; i < T * V; ++i) EXPECT_TRUE(std::isfinite(f32(dv2)[i])) << i;
}

TEST(ChunkGatedDeltaRuleBwdDhu, Refusals) {
  Tensor q = full({1, 10, 2, 8}, 0.1f), k = full({1, 10, 2, 8}, 0.1f), w = full({1, 10, 4, 8}, 0);
  Tensor dout = full({1, 10, 4, 4}, 0), dv = full({1, 10, 4, 4}, 0);
  Tensor dh = full({1, 1, 4, 8, 4}, 0), dv2 = full({1, 10, 4, 4}, 0);
  ChunkGatedDeltaRuleBwdDhuArgs a;
  a.q = q.view(), a.k = k.view(), a.w = w.view(), a.do_ = dout.view(), a.dv_local = dv.view();
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()).ok());
  a.chunk_size = 128;
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "chunk_size=128 must be 16, 32 or 64"));
  a.chunk_size = 16;
  Tensor bad_do = full({1, 10, 3, 4}, 0);
  a.do_ = bad_do.view();
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "do's HV=3 must be a multiple of q's H=2"));
  a.do_ = dout.view();
  Tensor bad_w = full({1, 10, 2, 8}, 0);
  a.w = bad_w.view();
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "w must be [B, T, HV, K]"));
  a.w = w.view();
  Tensor bad_h0 = full({2, 4, 8, 4}, 0);
  a.h0 = bad_h0.view();
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "h0 must be [N, HV, K, V]"));
  Tensor h0 = full({1, 4, 8, 4}, 0);
  a.h0 = h0.view();
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "dh0 must be given exactly when h0 is"));
  a.h0.reset();
  Tensor bad_dht = full({1, 4, 8, 5}, 0);
  a.dht = bad_dht.view();
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()),
                  "dht must be [N, HV, K, V]"));
  a.dht.reset();
  Tensor bad_dh = full({1, 2, 4, 8, 4}, 0);
  EXPECT_TRUE(has(chunk_gated_delta_rule_bwd_dhu(a, bad_dh.view(), nullptr, dv2.view()),
                  "dh must be contiguous [1, 1, 4, 8, 4]"));
  a.scale = NAN;
  EXPECT_TRUE(
      has(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()), "must be finite"));
}

// gk (no g): T = 20, chunk 16 (chunks [0, 16) and [16, 20)), H = HV = 1, K = 2, V = 1, q = k = do
// = 1, w = c, dv_local = 0.25, dht = (d0, d1), scale 1. gk is 5 except on the chunks' last rows,
// gk[15] = (−0.2, −0.6) and gk[19] = (−0.3, −1.0): only those rows may be read (exp(5) elsewhere
// would show). Per chunk of R rows: dv2_t = 0.25 + S_0 + S_1 (no per-t gk factor), then
// S_i ← exp(gk_L[i])·S_i + R − c·Σ_t dv2_t.
TEST(ChunkGatedDeltaRuleBwdDhu, HandComputedGk) {
  const float c = 0.03f, d0 = 0.7f, d1 = -0.4f;
  Tensor q = full({1, 20, 1, 2}, 1), k = full({1, 20, 1, 2}, 1), w = full({1, 20, 1, 2}, c);
  Tensor dout = full({1, 20, 1, 1}, 1), dv = full({1, 20, 1, 1}, 0.25f);
  Tensor gk = full({1, 20, 1, 2}, 5.0f), dht = Tensor::empty({1, 1, 2, 1}, DType::fp32);
  f32(gk)[15 * 2] = -0.2f, f32(gk)[15 * 2 + 1] = -0.6f;
  f32(gk)[19 * 2] = -0.3f, f32(gk)[19 * 2 + 1] = -1.0f;
  f32(dht)[0] = d0, f32(dht)[1] = d1;
  Tensor h0 = full({1, 1, 2, 1}, 5), dh = full({1, 2, 1, 2, 1}, NAN);
  Tensor dh0 = full({1, 1, 2, 1}, NAN), dv2 = full({1, 20, 1, 1}, NAN);
  ChunkGatedDeltaRuleBwdDhuArgs a;
  a.q = q.view(), a.k = k.view(), a.w = w.view(), a.do_ = dout.view(), a.dv_local = dv.view();
  a.gk = gk.view(), a.h0 = h0.view(), a.dht = dht.view();
  a.scale = 1.0;
  a.chunk_size = 16;
  const TensorView dh0v = dh0.view();
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  double S[2] = {d0, d1};
  const double gl[2][2] = {{-0.2, -0.6}, {-0.3, -1.0}};
  for (int ci = 1; ci >= 0; --ci) {
    const int r0 = ci * 16, rows = ci == 1 ? 4 : 16;
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(f32(dh)[ci * 2 + i], S[i], 1e-5) << ci << " " << i;
    const double d2 = 0.25 + S[0] + S[1];
    for (int t = r0; t < r0 + rows; ++t) EXPECT_NEAR(f32(dv2)[t], d2, 1e-5) << t;
    for (int i = 0; i < 2; ++i) S[i] = std::exp(gl[ci][i]) * S[i] + rows - c * rows * d2;
  }
  EXPECT_NEAR(f32(dh0)[0], S[0], 1e-5);
  EXPECT_NEAR(f32(dh0)[1], S[1], 1e-5);
  // gate_log2: exp2 of the same rows.
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), &dh0v, dv2.view()).ok());
  const double s1_0 = std::exp2(-0.3) * d0 + 4 - c * 4 * (0.25 + d0 + d1);
  EXPECT_NEAR(f32(dh)[0], s1_0, 1e-5);
}

TEST(ChunkGatedDeltaRuleBwdDhu, GkRefusals) {
  Tensor q = full({1, 6, 2, 8}, 0), w = full({1, 6, 4, 8}, 0), dout = full({1, 6, 4, 3}, 0);
  Tensor dh = full({1, 1, 4, 8, 3}, 0), dv2 = full({1, 6, 4, 3}, 0);
  ChunkGatedDeltaRuleBwdDhuArgs a;
  a.q = q.view(), a.k = q.view(), a.w = w.view(), a.do_ = dout.view(), a.dv_local = dout.view();
  Tensor bad = full({1, 6, 2, 8}, 0);  // key heads instead of value heads
  a.gk = bad.view();
  Status st = chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view());
  EXPECT_TRUE(has(st, "gk must be [B, T, HV, K] = [1, 6, 4, 8] (q's B, T, K and do's HV)"))
      << st.message();
  Tensor flat = full({1, 6, 4}, 0);
  a.gk = flat.view();
  st = chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view());
  EXPECT_TRUE(has(st, "gk must be [B, T, HV, K] of fp64, fp32, fp16 or bf16")) << st.message();
  Tensor good = full({1, 6, 4, 8}, 0);
  a.gk = good.view();
  EXPECT_TRUE(chunk_gated_delta_rule_bwd_dhu(a, dh.view(), nullptr, dv2.view()).ok());
}

}  // namespace
}  // namespace recops
