// training/chunk_fwd_o/test_chunk_fwd_o.cpp: the C++ tests of the op beyond `recops check`'s
// cases: a hand-computed chunk (with g and with KDA's gk), the GVA head mapping with the varlen
// chunk numbering of h (and gk across the CPU path's 16-row sub-blocks), the default scale, the
// refusals and their messages (torch-free; built into tests/cpp's
// recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;
using gdn_test::f64;
using gdn_test::filled;

// T = 2, H = HV = 1, K = 2, V = 1, chunk 16: both rows hand-computed.
TEST(ChunkFwdO, HandComputedChunk) {
  Tensor q = Tensor::empty({1, 2, 1, 2}, DType::fp32), k = Tensor::empty({1, 2, 1, 2}, DType::fp32);
  Tensor v = Tensor::empty({1, 2, 1, 1}, DType::fp32),
         h = Tensor::empty({1, 1, 1, 2, 1}, DType::fp32);
  Tensor g = Tensor::empty({1, 2, 1}, DType::fp32), o = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  const float qv[] = {1, 2, -1, 0.5f}, kv[] = {0.5f, 1, 2, -1}, vv[] = {3, -2}, hv[] = {0.25f, -1};
  const float gv[] = {-0.5f, -2};
  for (int i = 0; i < 4; ++i) f32(q)[i] = qv[i], f32(k)[i] = kv[i];
  for (int i = 0; i < 2; ++i) f32(v)[i] = vv[i], f32(h)[i] = hv[i], f32(g)[i] = gv[i];
  f32(o)[0] = f32(o)[1] = NAN;
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.g = g.view();
  a.scale = 0.5;
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  // o_0 = s·e^{G0}·(h·q0) + s·(q0·k0)·v0;  o_1 = s·e^{G1}·(h·q1) + s·(e^{G1−G0}(q1·k0)v0 +
  // (q1·k1)v1)
  const double o0 = 0.5 * std::exp(-0.5) * (0.25 - 2) + 0.5 * (0.5 + 2) * 3;
  const double o1 = 0.5 * std::exp(-2.0) * (-0.25 - 0.5) +
                    0.5 * (std::exp(-1.5) * (-0.5 + 0.5) * 3 + (-2 - 0.5) * -2);
  EXPECT_NEAR(f32(o)[0], o0, 1e-6);
  EXPECT_NEAR(f32(o)[1], o1, 1e-6);
  // gate_log2: exp2 of G and of the differences; no g: no factors; default scale K^-1/2.
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  EXPECT_NEAR(f32(o)[0], 0.5 * std::exp2(-0.5) * (0.25 - 2) + 0.5 * (0.5 + 2) * 3, 1e-6);
  a.g.reset();
  a.scale.reset();
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  const double s = 1 / std::sqrt(2.0);
  EXPECT_NEAR(f32(o)[1], s * (-0.25 - 0.5) + s * ((-0.5 + 0.5) * 3 + (-2 - 0.5) * -2), 1e-6);
}

// HV = 2H with packed sequences [0, 3), [3, 3) (empty), [3, 20) and chunk 16: the chunks are
// h[0, 0] (sequence 0), h[0, 1] and h[0, 2] (sequence 2's two chunks); value heads 0, 1 use key
// head 0 and 2, 3 key head 1; checked against a direct loop of the formula.
TEST(ChunkFwdO, GvaHeadsAndVarlenChunkNumbering) {
  const int64_t T = 20, H = 2, HV = 4, K = 3, V = 2, NT = 3;
  Tensor q =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<float>((i * 7) % 11) / 8 - 0.6f; });
  Tensor k =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<float>((i * 5) % 13) / 9 - 0.7f; });
  Tensor v =
      filled({1, T, HV, V}, [](int64_t i) { return static_cast<float>((i * 3) % 7) / 4 - 0.8f; });
  Tensor h =
      filled({1, NT, HV, K, V}, [](int64_t i) { return static_cast<float>(i % 9) / 5 - 0.9f; });
  Tensor g = filled({1, T, HV}, [](int64_t i) { return -0.05f * static_cast<float>(i % 17); });
  Tensor off = Tensor::empty({4}, DType::int32);
  const int32_t ov[] = {0, 3, 3, 20};
  for (int i = 0; i < 4; ++i) static_cast<int32_t*>(off.data())[i] = ov[i];
  Tensor o = Tensor::empty({1, T, HV, V}, DType::fp32);
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.g = g.view();
  a.seq_offsets = off.view();
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  const double s = 1 / std::sqrt(3.0);
  auto at = [](Tensor& x, int64_t i) { return static_cast<double>(f32(x)[i]); };
  for (int64_t t = 0; t < T; ++t) {
    const int64_t c0 = t < 3 ? 0 : t < 19 ? 3 : 19, hc = t < 3 ? 0 : t < 19 ? 1 : 2;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t hk = hv / 2;
      const double Gt = at(g, t * HV + hv);
      for (int64_t c = 0; c < V; ++c) {
        double inter = 0, intra = 0;
        for (int64_t d = 0; d < K; ++d)
          inter += at(h, ((hc * HV + hv) * K + d) * V + c) * at(q, (t * H + hk) * K + d);
        for (int64_t j = c0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < K; ++d)
            dot += at(q, (t * H + hk) * K + d) * at(k, (j * H + hk) * K + d);
          intra += std::exp(Gt - at(g, j * HV + hv)) * dot * at(v, (j * HV + hv) * V + c);
        }
        EXPECT_NEAR(f32(o)[(t * HV + hv) * V + c], s * std::exp(Gt) * inter + s * intra, 1e-5)
            << "t=" << t << " hv=" << hv << " v=" << c;
      }
    }
  }
}

// gk (KDA's per-channel G): T = 2, H = HV = 1, K = 2, V = 1, chunk 16, both rows hand-computed:
// o_t = s·Σ_d q_td e^{G_td} h_d + s·Σ_{j ≤ t} (Σ_d q_td k_jd e^{G_td − G_jd}) v_j.
TEST(ChunkFwdO, GkHandComputedChunk) {
  Tensor q = Tensor::empty({1, 2, 1, 2}, DType::fp32), k = Tensor::empty({1, 2, 1, 2}, DType::fp32);
  Tensor v = Tensor::empty({1, 2, 1, 1}, DType::fp32),
         h = Tensor::empty({1, 1, 1, 2, 1}, DType::fp32);
  Tensor gk = Tensor::empty({1, 2, 1, 2}, DType::fp32),
         o = Tensor::empty({1, 2, 1, 1}, DType::fp32);
  const float qv[] = {1, 2, -1, 0.5f}, kv[] = {0.5f, 1, 2, -1}, vv[] = {3, -2}, hv[] = {0.25f, -1};
  const float gv[] = {-0.5f, -0.25f, -2, -0.75f};  // G_0 = (-0.5, -0.25), G_1 = (-2, -0.75)
  for (int i = 0; i < 4; ++i) f32(q)[i] = qv[i], f32(k)[i] = kv[i], f32(gk)[i] = gv[i];
  for (int i = 0; i < 2; ++i) f32(v)[i] = vv[i], f32(h)[i] = hv[i];
  f32(o)[0] = f32(o)[1] = NAN;
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.gk = gk.view();
  a.scale = 0.5;
  a.chunk_size = 16;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  auto E = [](double x) { return std::exp(x); };
  const double o0 = 0.5 * (1 * E(-0.5) * 0.25 + 2 * E(-0.25) * -1) + 0.5 * (0.5 + 2) * 3;
  const double o1 = 0.5 * (-1 * E(-2) * 0.25 + 0.5 * E(-0.75) * -1) +
                    0.5 * ((-1 * 0.5 * E(-1.5) + 0.5 * 1 * E(-0.5)) * 3 + (-2 - 0.5) * -2);
  EXPECT_NEAR(f32(o)[0], o0, 1e-6);
  EXPECT_NEAR(f32(o)[1], o1, 1e-6);
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  const double l1 = 0.5 * (-1 * std::exp2(-2) * 0.25 + 0.5 * std::exp2(-0.75) * -1) +
                    0.5 * ((-1 * 0.5 * std::exp2(-1.5) + 0.5 * std::exp2(-0.5)) * 3 + 5);
  EXPECT_NEAR(f32(o)[1], l1, 1e-6);
}

// gk in fp64 with HV = 2H, packed sequences [0, 3), [3, 3) (empty), [3, 70) and chunk 32: the
// long sequence's chunks have rows 16..31 (the sub-block split of the CPU path) and a 3-row tail;
// each output checked against a direct loop of the formula (the exponent of the difference).
TEST(ChunkFwdO, GkSubBlocksGvaVarlen) {
  const int64_t T = 70, H = 2, HV = 4, K = 5, V = 3, NT = 4, BT = 32;
  Tensor q =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<double>((i * 7) % 11) / 8 - 0.6; });
  Tensor k =
      filled({1, T, H, K}, [](int64_t i) { return static_cast<double>((i * 5) % 13) / 9 - 0.7; });
  Tensor v =
      filled({1, T, HV, V}, [](int64_t i) { return static_cast<double>((i * 3) % 7) / 4 - 0.8; });
  Tensor h =
      filled({1, NT, HV, K, V}, [](int64_t i) { return static_cast<double>(i % 9) / 5 - 0.9; });
  const int64_t starts[] = {0, 3, 3}, ends[] = {3, 3, 70};
  Tensor gk = Tensor::empty({1, T, HV, K}, DType::fp64);
  for (int n = 0; n < 3; ++n)
    for (int64_t t = starts[n]; t < ends[n]; ++t)
      for (int64_t c = 0; c < HV * K; ++c) {
        const double decay = -0.02 * static_cast<double>((t * 7 + c * 3) % 11 + 1);
        const bool first = (t - starts[n]) % BT == 0;
        f64(gk)[t * HV * K + c] = (first ? 0.0 : f64(gk)[(t - 1) * HV * K + c]) + decay;
      }
  Tensor off = Tensor::empty({4}, DType::int64);
  const int64_t ov[] = {0, 3, 3, 70};
  for (int i = 0; i < 4; ++i) static_cast<int64_t*>(off.data())[i] = ov[i];
  Tensor o = Tensor::empty({1, T, HV, V}, DType::fp64);
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.gk = gk.view();
  a.seq_offsets = off.view();
  a.chunk_size = BT;
  ASSERT_TRUE(chunk_fwd_o(a, o.view()).ok());
  const double s = 1 / std::sqrt(5.0);
  for (int64_t t = 0; t < T; ++t) {
    // chunks: [0, 3) h[0]; [3, 35) h[1]; [35, 67) h[2]; [67, 70) h[3]
    const int64_t hc = t < 3 ? 0 : 1 + (t - 3) / BT, c0 = t < 3 ? 0 : 3 + (t - 3) / BT * BT;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t hk = hv / 2;
      auto G = [&](int64_t r, int64_t d) { return f64(gk)[(r * HV + hv) * K + d]; };
      auto Q = [&](int64_t r, int64_t d) { return f64(q)[(r * H + hk) * K + d]; };
      for (int64_t c = 0; c < V; ++c) {
        double inter = 0, intra = 0;
        for (int64_t d = 0; d < K; ++d)
          inter += Q(t, d) * std::exp(G(t, d)) * f64(h)[((hc * HV + hv) * K + d) * V + c];
        for (int64_t j = c0; j <= t; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < K; ++d)
            dot += Q(t, d) * f64(k)[(j * H + hk) * K + d] * std::exp(G(t, d) - G(j, d));
          intra += dot * f64(v)[(j * HV + hv) * V + c];
        }
        EXPECT_NEAR(f64(o)[(t * HV + hv) * V + c], s * inter + s * intra, 1e-12)
            << "t=" << t << " hv=" << hv << " v=" << c;
      }
    }
  }
}

TEST(ChunkFwdO, GkRefusals) {
  Tensor q = Tensor::empty({1, 70, 2, 8}, DType::fp32),
         k = Tensor::empty({1, 70, 2, 8}, DType::fp32);
  Tensor v = Tensor::empty({1, 70, 4, 5}, DType::fp32),
         h = Tensor::empty({1, 2, 4, 8, 5}, DType::fp32);
  Tensor o = Tensor::empty({1, 70, 4, 5}, DType::fp32);
  Tensor g = Tensor::empty({1, 70, 4}, DType::fp32), gk = Tensor::empty({1, 70, 4, 8}, DType::fp32);
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view(), a.gk = gk.view();
  a.g = g.view();
  expect_error(chunk_fwd_o(a, o.view()), "chunk_fwd_o: g and gk are mutually exclusive");
  a.g.reset();
  Tensor bad = Tensor::empty({1, 70, 2, 8}, DType::fp32);  // H heads, not HV
  a.gk = bad.view();
  expect_error(chunk_fwd_o(a, o.view()),
               "chunk_fwd_o: gk must be [B, T, HV, K] = [1, 70, 4, 8] (B, T, K of q; HV of "
               "v_new)");
  Tensor ints = Tensor::empty({1, 70, 4, 8}, DType::int32);
  a.gk = ints.view();
  expect_error(chunk_fwd_o(a, o.view()), "gk must be [B, T, HV, K] of fp64, fp32, fp16 or bf16");
  a.gk = gk.view();
  EXPECT_TRUE(chunk_fwd_o(a, o.view()).ok());
}

struct Shapes {
  Shape q, k, v, h;
  int64_t bt = 64;
  Shape o;
  DType qt = DType::fp32, ot = DType::fp32;
};

Status call(const Shapes& s) {
  Tensor q = Tensor::empty(s.q, s.qt), k = Tensor::empty(s.k, DType::fp32);
  Tensor v = Tensor::empty(s.v, DType::fp32), h = Tensor::empty(s.h, DType::fp32);
  Tensor o = Tensor::empty(s.o, s.ot);
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view();
  a.chunk_size = s.bt;
  return chunk_fwd_o(a, o.view());
}

TEST(ChunkFwdO, Refusals) {
  const Shapes ok{{1, 70, 2, 8}, {1, 70, 2, 8}, {1, 70, 4, 5}, {1, 2, 4, 8, 5}, 64, {1, 70, 4, 5}};
  EXPECT_TRUE(call(ok).ok());
  Shapes s = ok;
  s.v = {1, 70, 3, 5}, s.h = {1, 2, 3, 8, 5}, s.o = {1, 70, 3, 5};
  expect_error(call(s), "v_new's HV=3 must be a multiple of q's H=2");
  s = ok, s.k = {1, 70, 2, 7};
  expect_error(call(s), "k must be [B, T, H, K]");
  s = ok, s.h = {1, 3, 4, 8, 5};
  expect_error(call(s), "h must be [B, NT, HV, K, V]");
  s = ok, s.h = {1, 2, 4, 5, 8};
  expect_error(call(s), "h must be [B, NT, HV, K, V]");
  s = ok, s.bt = 48;
  expect_error(call(s), "chunk_size=48 must be 16, 32 or 64");
  s = ok, s.o = {1, 70, 4, 4};
  expect_error(call(s), "o must be contiguous [1, 70, 4, 5]");
  s = ok, s.ot = DType::bf16;
  expect_error(call(s), "of q's dtype fp32");
  s = ok, s.qt = DType::int32;
  expect_error(call(s), "q must be [B, T, H, K] of fp64, fp32, fp16 or bf16");
}

TEST(ChunkFwdO, ShapeIsVNewsWithQsDtype) {
  Tensor q = Tensor::empty({2, 7, 3, 5}, DType::bf16), k = Tensor::empty({2, 7, 3, 5}, DType::bf16);
  Tensor v = Tensor::empty({2, 7, 6, 4}, DType::fp32),
         h = Tensor::empty({2, 1, 6, 5, 4}, DType::fp32);
  ChunkFwdOArgs a;
  a.q = q.view(), a.k = k.view(), a.v_new = v.view(), a.h = h.view();
  a.chunk_size = 16;
  Shape s;
  DType t;
  ASSERT_TRUE(chunk_fwd_o_shape(a, &s, &t).ok());
  EXPECT_EQ(s, (Shape{2, 7, 6, 4}));
  EXPECT_EQ(t, DType::bf16);
}

}  // namespace
}  // namespace recops
