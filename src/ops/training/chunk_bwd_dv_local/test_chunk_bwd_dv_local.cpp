// training/chunk_bwd_dv_local/test_chunk_bwd_dv_local.cpp: the C++ tests of the op beyond `recops
// check`'s cases: a hand-computed chunk, the GVA head mapping with packed sequences, the default
// scale, the refusals and their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/training/chunk_bwd_dv_local/chunk_bwd_dv_local.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::filled;

// T = 2, H = HV = 1, K = 2, V = 1, chunk 16: both rows hand-computed.
TEST(ChunkBwdDvLocal, HandComputedChunk) {
  Tensor q = Tensor::empty({1, 2, 1, 2}, DType::fp32), k = Tensor::empty({1, 2, 1, 2}, DType::fp32);
  Tensor d = Tensor::empty({1, 2, 1, 1}, DType::fp32), g = Tensor::empty({1, 2, 1}, DType::fp32);
  Tensor dv = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  const float qv[] = {1, 2, -1, 0.5f}, kv[] = {0.5f, 1, 2, -1}, dov[] = {3, -2}, gv[] = {-0.5f, -2};
  for (int i = 0; i < 4; ++i) f32(q)[i] = qv[i], f32(k)[i] = kv[i];
  for (int i = 0; i < 2; ++i) f32(d)[i] = dov[i], f32(g)[i] = gv[i];
  f32(dv)[0] = f32(dv)[1] = NAN;
  ChunkBwdDvLocalArgs a;
  a.q = q.view(), a.k = k.view(), a.do_ = d.view(), a.g = g.view();
  a.scale = 0.5;
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  // q0·k0 = 2.5, q1·k0 = 0, q1·k1 = -2.5.
  // dv_0 = s·((q0·k0)·do0 + e^{G1−G0}·(q1·k0)·do1);  dv_1 = s·(q1·k1)·do1
  EXPECT_NEAR(f32(dv)[0], 0.5 * (2.5 * 3 + std::exp(-1.5) * 0 * -2), 1e-6);
  EXPECT_NEAR(f32(dv)[1], 0.5 * (-2.5 * -2), 1e-6);
  // A row with a non-zero off-diagonal term: k0 = (1, 1) gives q1·k0 = -0.5.
  f32(k)[0] = 1, f32(k)[1] = 1;
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  EXPECT_NEAR(f32(dv)[0], 0.5 * (3 * 3 + std::exp(-1.5) * -0.5 * -2), 1e-6);
  // gate_log2: exp2 of the difference; no g: no factor; default scale K^-1/2.
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  EXPECT_NEAR(f32(dv)[0], 0.5 * (3 * 3 + std::exp2(-1.5) * -0.5 * -2), 1e-6);
  a.g.reset();
  a.scale.reset();
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  EXPECT_NEAR(f32(dv)[0], (3 * 3 + -0.5 * -2) / std::sqrt(2.0), 1e-6);
  EXPECT_NEAR(f32(dv)[1], (-2.5 * -2) / std::sqrt(2.0), 1e-6);
}

// HV = 2H with packed sequences [0, 3), [3, 3) (empty), [3, 20) and chunk 16: sequence 2's chunks
// are [3, 19) and [19, 20); value heads 0, 1 use key head 0 and 2, 3 key head 1; checked against a
// direct loop of the formula.
TEST(ChunkBwdDvLocal, GvaHeadsAndPackedChunks) {
  const int64_t T = 20, H = 2, HV = 4, K = 3, V = 2;
  Tensor q =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<float>((i * 7) % 11) / 8 - 0.6f; });
  Tensor k =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<float>((i * 5) % 13) / 9 - 0.7f; });
  Tensor d =
      filled({1, T, HV, V}, [](int64_t i) { return static_cast<float>((i * 3) % 7) / 4 - 0.8f; });
  Tensor g = filled({1, T, HV}, [](int64_t i) { return -0.05f * static_cast<float>(i % 17); });
  Tensor off = Tensor::empty({4}, DType::int64);
  const int64_t ov[] = {0, 3, 3, 20};
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  Tensor dv = filled({1, T, HV, V}, [](int64_t) { return NAN; });
  ChunkBwdDvLocalArgs a;
  a.q = q.view(), a.k = k.view(), a.do_ = d.view(), a.g = g.view();
  a.seq_offsets = off.view();
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  const double s = 1 / std::sqrt(3.0);
  auto at = [](Tensor& x, int64_t i) { return static_cast<double>(f32(x)[i]); };
  for (int64_t j = 0; j < T; ++j) {
    const int64_t c1 = j < 3 ? 3 : j < 19 ? 19 : 20;  // one past the last row of j's chunk
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t hk = hv / 2;
      for (int64_t c = 0; c < V; ++c) {
        double want = 0;
        for (int64_t i = j; i < c1; ++i) {
          double dot = 0;
          for (int64_t e = 0; e < K; ++e)
            dot += at(q, (i * H + hk) * K + e) * at(k, (j * H + hk) * K + e);
          want += std::exp(at(g, i * HV + hv) - at(g, j * HV + hv)) * dot *
                  at(d, (i * HV + hv) * V + c);
        }
        EXPECT_NEAR(f32(dv)[(j * HV + hv) * V + c], s * want, 1e-5)
            << "j=" << j << " hv=" << hv << " v=" << c;
      }
    }
  }
}

// Decays so strong that exp(G_j − G_i) for i > j would overflow fp32: only the non-positive
// differences are formed, so the result is finite (and equals the diagonal term wherever the
// off-diagonal factors underflow).
TEST(ChunkBwdDvLocal, StrongDecaysStayFinite) {
  const int64_t T = 40;
  Tensor q = filled({1, T, 1, 4}, [](int64_t i) { return static_cast<float>(i % 5) / 4 - 0.4f; });
  Tensor k = filled({1, T, 1, 4}, [](int64_t i) { return static_cast<float>(i % 3) / 2 - 0.3f; });
  Tensor d = filled({1, T, 1, 3}, [](int64_t i) { return static_cast<float>(i % 7) / 3 - 1; });
  Tensor g = filled({1, T, 1}, [](int64_t i) { return -200.0f * static_cast<float>(i % 32); });
  Tensor dv = Tensor::empty({1, T, 1, 3}, DType::fp32);
  ChunkBwdDvLocalArgs a;
  a.q = q.view(), a.k = k.view(), a.do_ = d.view(), a.g = g.view();
  a.chunk_size = 32;
  ASSERT_TRUE(chunk_bwd_dv_local(a, dv.view()).ok());
  for (int64_t i = 0; i < T * 3; ++i) EXPECT_TRUE(std::isfinite(f32(dv)[i])) << i;
}

struct Shapes {
  Shape q, k, d;
  int64_t bt = 64;
  Shape dv;
  DType qt = DType::fp32, dvt = DType::fp32;
  Shape g = {};
};

Status call(const Shapes& s) {
  Tensor q = Tensor::empty(s.q, s.qt), k = Tensor::empty(s.k, DType::fp32);
  Tensor d = Tensor::empty(s.d, DType::fp32), dv = Tensor::empty(s.dv, s.dvt);
  Tensor g = Tensor::empty(s.g.empty() ? Shape{1} : s.g, DType::fp32);
  ChunkBwdDvLocalArgs a;
  a.q = q.view(), a.k = k.view(), a.do_ = d.view();
  if (!s.g.empty()) a.g = g.view();
  a.chunk_size = s.bt;
  return chunk_bwd_dv_local(a, dv.view());
}

TEST(ChunkBwdDvLocal, Refusals) {
  const Shapes ok{{1, 70, 2, 8}, {1, 70, 2, 8}, {1, 70, 4, 5}, 64, {1, 70, 4, 5}};
  EXPECT_TRUE(call(ok).ok());
  Shapes s = ok;
  s.d = {1, 70, 3, 5}, s.dv = {1, 70, 3, 5};
  expect_error(call(s), "do's HV=3 must be a multiple of q's H=2");
  s = ok, s.k = {1, 70, 2, 7};
  expect_error(call(s), "k must be [B, T, H, K]");
  s = ok, s.d = {1, 69, 4, 5};
  expect_error(call(s), "do must be [B, T, HV, V]");
  s = ok, s.g = {1, 70, 2};
  expect_error(call(s), "g must be [B, T, HV]");
  s = ok, s.bt = 48;
  expect_error(call(s), "chunk_size=48 must be 16, 32 or 64");
  s = ok, s.dv = {1, 70, 4, 4};
  expect_error(call(s), "dv must be contiguous [1, 70, 4, 5]");
  s = ok, s.dvt = DType::bf16;
  expect_error(call(s), "of do's dtype fp32");
  s = ok, s.qt = DType::int32;
  expect_error(call(s), "q must be [B, T, H, K] of fp64, fp32, fp16 or bf16");
}

TEST(ChunkBwdDvLocal, ShapeIsDosWithDosDtype) {
  Tensor q = Tensor::empty({2, 7, 3, 5}, DType::fp32), k = Tensor::empty({2, 7, 3, 5}, DType::fp32);
  Tensor d = Tensor::empty({2, 7, 6, 4}, DType::bf16);
  ChunkBwdDvLocalArgs a;
  a.q = q.view(), a.k = k.view(), a.do_ = d.view();
  a.chunk_size = 16;
  Shape s;
  DType t;
  ASSERT_TRUE(chunk_bwd_dv_local_shape(a, &s, &t).ok());
  EXPECT_EQ(s, (Shape{2, 7, 6, 4}));
  EXPECT_EQ(t, DType::bf16);
}

}  // namespace
}  // namespace recops
