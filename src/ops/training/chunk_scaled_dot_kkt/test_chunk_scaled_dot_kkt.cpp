// training/chunk_scaled_dot_kkt/test_chunk_scaled_dot_kkt.cpp: the C++ tests of the op beyond
// `recops check`'s cases: a hand-computed chunk, the GVA head mapping, the refusals and their
// messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;

// T = 3, H = 1, K = 2, chunk 16: rows 1 and 2 of A hand-computed, the rest 0.
TEST(ChunkScaledDotKkt, HandComputedChunk) {
  Tensor k = Tensor::empty({1, 3, 1, 2}, DType::fp32);
  Tensor beta = Tensor::empty({1, 3, 1}, DType::fp32);
  Tensor g = Tensor::empty({1, 3, 1}, DType::fp32);
  Tensor A = Tensor::empty({1, 3, 1, 16}, DType::fp32);
  const float kv[] = {1, 2, 3, -1, 0.5f, 4};
  const float bv[] = {0.5f, 0.25f, 2};
  const float gv[] = {-0.5f, -1, -3};
  for (int i = 0; i < 6; ++i) f32(k)[i] = kv[i];
  for (int i = 0; i < 3; ++i) f32(beta)[i] = bv[i], f32(g)[i] = gv[i];
  for (int64_t i = 0; i < 48; ++i) f32(A)[i] = NAN;
  ChunkScaledDotKktArgs a;
  a.k = k.view();
  a.beta = beta.view();
  a.g = g.view();
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_scaled_dot_kkt(a, A.view()).ok());
  const float* o = f32(A);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(o[j], 0.0f) << j;  // row 0: nothing before it
  EXPECT_NEAR(o[16], 0.25 * (3 - 2) * std::exp(-1 + 0.5), 1e-6);
  EXPECT_NEAR(o[32], 2 * (0.5 + 8) * std::exp(-3 + 0.5), 1e-6);
  EXPECT_NEAR(o[33], 2 * (1.5 - 4) * std::exp(-3 + 1), 1e-6);
  for (int j = 1; j < 16; ++j) EXPECT_EQ(o[16 + j], 0.0f) << j;
  for (int j = 2; j < 16; ++j) EXPECT_EQ(o[32 + j], 0.0f) << j;
  // gate_log2: exp2 of the same differences; no g: no factor.
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_scaled_dot_kkt(a, A.view()).ok());
  EXPECT_NEAR(o[33], 2 * (1.5 - 4) * std::exp2(-3 + 1), 1e-6);
  a.g.reset();
  ASSERT_TRUE(chunk_scaled_dot_kkt(a, A.view()).ok());
  EXPECT_NEAR(o[33], 2 * (1.5 - 4), 1e-6);
}

// HV = 2H: value heads 0, 1 use key head 0; 2, 3 key head 1 (repeat_interleave), chunks restart
// at a sequence start.
TEST(ChunkScaledDotKkt, GvaHeadsAndVarlenRestart) {
  const int64_t T = 5, H = 2, HV = 4, K = 3;
  Tensor k = Tensor::empty({1, T, H, K}, DType::fp32);
  Tensor beta = Tensor::empty({1, T, HV}, DType::fp32);
  Tensor off = Tensor::empty({3}, DType::int64);
  Tensor A = Tensor::empty({1, T, HV, 16}, DType::fp32);
  for (int64_t i = 0; i < T * H * K; ++i) f32(k)[i] = static_cast<float>((i * 7) % 11) - 5;
  for (int64_t i = 0; i < T * HV; ++i) f32(beta)[i] = 0.1f * static_cast<float>(i + 1);
  const int64_t ov[] = {0, 2, 5};
  for (int i = 0; i < 3; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  ChunkScaledDotKktArgs a;
  a.k = k.view();
  a.beta = beta.view();
  a.seq_offsets = off.view();
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_scaled_dot_kkt(a, A.view()).ok());
  auto kk = [&](int64_t t, int64_t s, int64_t h) {
    double d = 0;
    for (int64_t c = 0; c < K; ++c) d += f32(k)[(t * H + h) * K + c] * f32(k)[(s * H + h) * K + c];
    return d;
  };
  const float* o = f32(A);
  for (int64_t hv = 0; hv < HV; ++hv) {
    const double b1 = f32(beta)[1 * HV + hv], b4 = f32(beta)[4 * HV + hv];
    EXPECT_NEAR(o[(1 * HV + hv) * 16 + 0], b1 * kk(1, 0, hv / 2), 1e-5) << hv;
    EXPECT_EQ(o[(2 * HV + hv) * 16 + 0], 0.0f) << hv;  // row 2 starts sequence 1
    EXPECT_NEAR(o[(4 * HV + hv) * 16 + 0], b4 * kk(4, 2, hv / 2), 1e-5) << hv;
    EXPECT_NEAR(o[(4 * HV + hv) * 16 + 1], b4 * kk(4, 3, hv / 2), 1e-5) << hv;
  }
}

Status call(const Shape& ks, const Shape& bs, int64_t bt, const Shape& as, DType kt = DType::fp32,
            DType at = DType::fp32) {
  Tensor k = Tensor::empty(ks, kt), beta = Tensor::empty(bs, DType::fp32);
  Tensor A = Tensor::empty(as, at);
  ChunkScaledDotKktArgs a;
  a.k = k.view();
  a.beta = beta.view();
  a.chunk_size = bt;
  return chunk_scaled_dot_kkt(a, A.view());
}

TEST(ChunkScaledDotKkt, Refusals) {
  expect_error(call({1, 4, 2, 8}, {1, 4, 3}, 64, {1, 4, 3, 64}),
               "beta's HV=3 must be a multiple of k's H=2");
  expect_error(call({1, 4, 2, 8}, {1, 5, 2}, 64, {1, 4, 2, 64}), "beta must be [B, T, HV]");
  expect_error(call({1, 4, 8}, {1, 4, 2}, 64, {1, 4, 2, 64}), "k must be [B, T, H, K]");
  expect_error(call({1, 4, 2, 8}, {1, 4, 2}, 48, {1, 4, 2, 48}),
               "chunk_size=48 must be 16, 32 or 64");
  expect_error(call({1, 4, 2, 8}, {1, 4, 2}, 64, {1, 4, 2, 32}), "A must be contiguous fp32");
  expect_error(call({1, 4, 2, 8}, {1, 4, 2}, 64, {1, 4, 2, 64}, DType::fp32, DType::bf16),
               "A must be contiguous fp32");
  expect_error(call({1, 4, 2, 8}, {1, 4, 2}, 64, {1, 4, 2, 64}, DType::int32),
               "k must be [B, T, H, K] of fp64, fp32, fp16 or bf16");
  // G with another HV than beta's.
  Tensor k = Tensor::empty({1, 4, 1, 8}, DType::fp32), beta = Tensor::empty({1, 4, 2}, DType::fp32);
  Tensor g = Tensor::empty({1, 4, 1}, DType::fp32), A = Tensor::empty({1, 4, 2, 64}, DType::fp32);
  ChunkScaledDotKktArgs a;
  a.k = k.view();
  a.beta = beta.view();
  a.g = g.view();
  expect_error(chunk_scaled_dot_kkt(a, A.view()), "g must be [B, T, HV] = [1, 4, 2]");
}

TEST(ChunkScaledDotKkt, ShapeIsBTHVChunk) {
  Tensor k = Tensor::empty({2, 7, 3, 5}, DType::bf16), beta = Tensor::empty({2, 7, 6}, DType::bf16);
  ChunkScaledDotKktArgs a;
  a.k = k.view();
  a.beta = beta.view();
  a.chunk_size = 32;
  Shape s;
  ASSERT_TRUE(chunk_scaled_dot_kkt_shape(a, &s).ok());
  EXPECT_EQ(s, (Shape{2, 7, 6, 32}));
}

}  // namespace
}  // namespace recops
