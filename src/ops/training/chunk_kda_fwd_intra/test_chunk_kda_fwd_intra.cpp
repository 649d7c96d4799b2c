// training/chunk_kda_fwd_intra/test_chunk_kda_fwd_intra.cpp: the C++ tests of the op beyond
// `recops check`'s cases: a hand-computed two-row chunk (every output), the CPU path against the
// golden across sub-blocks with the GVA head mapping and a varlen restart, empty inputs and the
// refusals with their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ops/training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h"
#include "ops/training/common/gdn_test.h"
#include "recops/tensor.h"

namespace recops {
namespace {
using gdn_test::expect_error;
using gdn_test::f32;

// An fp32 CPU tensor with element i = f(i) (f computed in fp64).
template <class F>
Tensor filled(const Shape& s, F f) {
  return gdn_test::filled(s, [&](int64_t i) { return static_cast<float>(f(i)); });
}

struct Outs {
  Tensor w, u, qg, kg, Aqk, Akk;
  Outs(int64_t B, int64_t T, int64_t HV, int64_t K, int64_t V, int64_t BT)
      : w(Tensor::empty({B, T, HV, K}, DType::fp32)),
        u(Tensor::empty({B, T, HV, V}, DType::fp32)),
        qg(Tensor::empty({B, T, HV, K}, DType::fp32)),
        kg(Tensor::empty({B, T, HV, K}, DType::fp32)),
        Aqk(Tensor::empty({B, T, HV, BT}, DType::fp32)),
        Akk(Tensor::empty({B, T, HV, BT}, DType::fp32)) {
    for (Tensor* t : {&w, &u, &qg, &kg, &Aqk, &Akk})
      for (int64_t i = 0; i < t->view().numel(); ++i) f32(*t)[i] = NAN;  // poisoned
  }
  ChunkKdaFwdIntraOut views() {
    return {w.view(), u.view(), qg.view(), kg.view(), Aqk.view(), Akk.view()};
  }
};

// T = 2, H = HV = 1, K = 2, V = 1, chunk 32: every output hand-computed.
TEST(ChunkKdaFwdIntra, HandComputedChunk) {
  Tensor q = filled({1, 2, 1, 2}, [](int64_t i) { return 0.5 * static_cast<double>(i + 1); });
  Tensor k =
      filled({1, 2, 1, 2}, [](int64_t i) { return i == 3 ? -1.0 : static_cast<double>(i + 1); });
  Tensor v = filled({1, 2, 1, 1}, [](int64_t i) { return i ? -2.0 : 4.0; });
  Tensor g = filled({1, 2, 1, 2}, [](int64_t i) { return -0.25 * static_cast<double>(i + 1); });
  Tensor beta = filled({1, 2, 1}, [](int64_t i) { return i ? 0.25 : 0.5; });
  Outs o(1, 2, 1, 2, 1, 32);
  ChunkKdaFwdIntraArgs a;
  a.q = q.view(), a.k = k.view(), a.v = v.view(), a.g = g.view(), a.beta = beta.view();
  a.chunk_size = 32;
  a.scale = 2.0;
  ASSERT_TRUE(chunk_kda_fwd_intra(a, o.views()).ok());
  // q = [[.5, 1], [1.5, 2]], k = [[1, 2], [3, -1]], G = [[-.25, -.5], [-.75, -1]], beta .5, .25.
  const double g0[] = {-0.25, -0.5}, g1[] = {-0.75, -1.0};
  const double e10[] = {std::exp(g1[0] - g0[0]), std::exp(g1[1] - g0[1])};
  EXPECT_NEAR(f32(o.Aqk)[0], 2 * (0.5 * 1 + 1 * 2), 1e-5);
  EXPECT_NEAR(f32(o.Aqk)[32], 2 * (1.5 * 1 * e10[0] + 2 * 2 * e10[1]), 1e-5);
  EXPECT_NEAR(f32(o.Aqk)[33], 2 * (1.5 * 3 + 2 * -1), 1e-5);
  for (int j = 1; j < 32; ++j) EXPECT_EQ(f32(o.Aqk)[j], 0.0f) << j;  // above the diagonal
  for (int j = 2; j < 32; ++j) EXPECT_EQ(f32(o.Aqk)[32 + j], 0.0f) << j;
  const double m10 = 0.25 * (3 * 1 * e10[0] + -1 * 2 * e10[1]);
  EXPECT_NEAR(f32(o.Akk)[0], 1, 1e-6);
  EXPECT_NEAR(f32(o.Akk)[32], -m10, 1e-6);
  EXPECT_NEAR(f32(o.Akk)[33], 1, 1e-6);
  EXPECT_EQ(f32(o.Akk)[1], 0.0f);
  const double x0[] = {0.5 * 1 * std::exp(g0[0]), 0.5 * 2 * std::exp(g0[1])};
  const double x1[] = {0.25 * 3 * std::exp(g1[0]), 0.25 * -1 * std::exp(g1[1])};
  EXPECT_NEAR(f32(o.w)[0], x0[0], 1e-6);
  EXPECT_NEAR(f32(o.w)[1], x0[1], 1e-6);
  EXPECT_NEAR(f32(o.w)[2], -m10 * x0[0] + x1[0], 1e-6);
  EXPECT_NEAR(f32(o.w)[3], -m10 * x0[1] + x1[1], 1e-6);
  EXPECT_NEAR(f32(o.u)[0], 0.5 * 4, 1e-6);
  EXPECT_NEAR(f32(o.u)[1], -m10 * 0.5 * 4 + 0.25 * -2, 1e-6);
  EXPECT_NEAR(f32(o.qg)[1], 1 * std::exp(g0[1]), 1e-6);
  EXPECT_NEAR(f32(o.qg)[2], 1.5 * std::exp(g1[0]), 1e-6);
  EXPECT_NEAR(f32(o.kg)[0], 1 * std::exp(g1[0] - g0[0]), 1e-6);  // G of the last row (1)
  EXPECT_NEAR(f32(o.kg)[3], -1.0, 1e-6);
  // gate_log2: exp2 everywhere.
  a.gate_log2 = true;
  ASSERT_TRUE(chunk_kda_fwd_intra(a, o.views()).ok());
  EXPECT_NEAR(f32(o.qg)[2], 1.5 * std::exp2(g1[0]), 1e-6);
  EXPECT_NEAR(f32(o.Aqk)[32], 2 * (1.5 * std::exp2(g1[0] - g0[0]) + 4 * std::exp2(g1[1] - g0[1])),
              1e-5);
}

// The CPU path against the fp64 golden (reference forced) on 3 chunks of 64 (4 sub-blocks each),
// HV = 2H, and a varlen restart with a sub-chunk sequence.
TEST(ChunkKdaFwdIntra, CpuMatchesGoldenAcrossSubBlocks) {
  for (bool packed : {false, true}) {
    const int64_t T = 150, H = 2, HV = 4, K = 20, V = 6, BT = 64;
    Tensor q =
        filled({1, T, H, K}, [](int64_t i) { return std::sin(0.37 * static_cast<double>(i)); });
    Tensor k = filled({1, T, H, K},
                      [](int64_t i) { return 0.4 * std::cos(0.53 * static_cast<double>(i)); });
    Tensor v =
        filled({1, T, HV, V}, [](int64_t i) { return std::sin(0.11 * static_cast<double>(i)); });
    Tensor beta = filled({1, T, HV}, [](int64_t i) {
      return 0.3 + 0.4 * std::fabs(std::sin(static_cast<double>(i)));
    });
    // G: per-channel cumsum of decays in [-0.3, 0], restarting every chunk (and sequence).
    const int64_t starts[] = {0, 5, 70};
    Tensor g = Tensor::empty({1, T, HV, K}, DType::fp32);
    for (int64_t c = 0; c < HV * K; ++c) {
      double run = 0;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t s0 = packed ? (t >= 70 ? 70 : t >= 5 ? 5 : 0) : 0;
        if ((t - s0) % BT == 0) run = 0;
        run -= 0.3 * std::fabs(std::sin(0.7 * static_cast<double>(t * HV * K + c)));
        f32(g)[t * HV * K + c] = static_cast<float>(run);
      }
    }
    Tensor off = Tensor::empty({4}, DType::int64);
    const int64_t ov[] = {starts[0], starts[1], starts[2], T};
    std::copy(ov, ov + 4, static_cast<int64_t*>(off.data()));
    ChunkKdaFwdIntraArgs a;
    a.q = q.view(), a.k = k.view(), a.v = v.view(), a.g = g.view(), a.beta = beta.view();
    if (packed) a.seq_offsets = off.view();
    Outs got(1, T, HV, K, V, BT), want(1, T, HV, K, V, BT);
    ASSERT_TRUE(chunk_kda_fwd_intra(a, got.views()).ok());
    Context ref;
    ref.impl = "reference";
    ASSERT_TRUE(chunk_kda_fwd_intra(a, want.views(), ref).ok());
    Tensor* gs[] = {&got.w, &got.u, &got.qg, &got.kg, &got.Aqk, &got.Akk};
    Tensor* ws[] = {&want.w, &want.u, &want.qg, &want.kg, &want.Aqk, &want.Akk};
    for (int o = 0; o < 6; ++o)
      for (int64_t i = 0; i < gs[o]->view().numel(); ++i)
        ASSERT_NEAR(f32(*gs[o])[i], f32(*ws[o])[i],
                    2e-5 * std::max(1.0f, std::fabs(f32(*ws[o])[i])))
            << "output " << o << " at " << i;
  }
}

TEST(ChunkKdaFwdIntra, EmptyInputs) {
  ChunkKdaFwdIntraArgs a;
  Tensor q = Tensor::empty({2, 0, 2, 8}, DType::fp32), v = Tensor::empty({2, 0, 4, 3}, DType::fp32);
  Tensor g = Tensor::empty({2, 0, 4, 8}, DType::fp32), b = Tensor::empty({2, 0, 4}, DType::fp32);
  a.q = q.view(), a.k = q.view(), a.v = v.view(), a.g = g.view(), a.beta = b.view();
  Outs o(2, 0, 4, 8, 3, 64);
  EXPECT_TRUE(chunk_kda_fwd_intra(a, o.views()).ok());
  // Zero-length sequences only.
  Tensor q1 = Tensor::empty({1, 0, 2, 8}, DType::fp32),
         v1 = Tensor::empty({1, 0, 2, 3}, DType::fp32);
  Tensor g1 = Tensor::empty({1, 0, 2, 8}, DType::fp32), b1 = Tensor::empty({1, 0, 2}, DType::fp32);
  Tensor offi = Tensor::empty({3}, DType::int32);
  std::fill_n(static_cast<int32_t*>(offi.data()), 3, 0);
  a.q = q1.view(), a.k = q1.view(), a.v = v1.view(), a.g = g1.view(), a.beta = b1.view();
  a.seq_offsets = offi.view();
  Outs o1(1, 0, 2, 8, 3, 64);
  EXPECT_TRUE(chunk_kda_fwd_intra(a, o1.views()).ok());
}

TEST(ChunkKdaFwdIntra, RefusalsNameTheArgumentAndRule) {
  const int64_t T = 5;
  Tensor q = filled({1, T, 2, 4}, [](int64_t i) { return 0.1 * static_cast<double>(i); });
  Tensor v = filled({1, T, 4, 3}, [](int64_t i) { return 0.1 * static_cast<double>(i); });
  Tensor g = filled({1, T, 4, 4}, [](int64_t i) { return -0.01 * static_cast<double>(i); });
  Tensor b = filled({1, T, 4}, [](int64_t) { return 0.5; });
  Outs o(1, T, 4, 4, 3, 64);
  ChunkKdaFwdIntraArgs a;
  a.q = q.view(), a.k = q.view(), a.v = v.view(), a.g = g.view(), a.beta = b.view();
  ASSERT_TRUE(chunk_kda_fwd_intra(a, o.views()).ok());
  ChunkKdaFwdIntraArgs x = a;
  x.chunk_size = 16;
  expect_error(chunk_kda_fwd_intra(x, o.views()), "chunk_size=16 must be 32 or 64");
  Tensor g3 = filled({1, T, 4}, [](int64_t) { return 0.0; });
  x = a, x.g = g3.view();
  expect_error(chunk_kda_fwd_intra(x, o.views()), "g must be [B, T, HV, K]");
  Tensor g5 = filled({1, T, 4, 5}, [](int64_t) { return 0.0; });
  x = a, x.g = g5.view();
  expect_error(chunk_kda_fwd_intra(x, o.views()), "g must be [B, T, HV, K] = [1, 5, 4, 4]");
  Tensor v3 = filled({1, T, 3, 3}, [](int64_t) { return 0.0; });
  x = a, x.v = v3.view();
  expect_error(chunk_kda_fwd_intra(x, o.views()), "v's HV=3 must be a multiple of q's H=2");
  Tensor k6 = filled({1, T, 2, 6}, [](int64_t) { return 0.0; });
  x = a, x.k = k6.view();
  expect_error(chunk_kda_fwd_intra(x, o.views()), "k must be [B, T, H, K] = [1, 5, 2, 4]");
  x = a, x.scale = INFINITY;
  expect_error(chunk_kda_fwd_intra(x, o.views()), "scale=inf must be finite");
  Tensor off = Tensor::empty({2}, DType::int64);
  static_cast<int64_t*>(off.data())[0] = 0, static_cast<int64_t*>(off.data())[1] = 4;
  x = a, x.seq_offsets = off.view();
  expect_error(chunk_kda_fwd_intra(x, o.views()), "seq_offsets");
  Outs bad(1, T, 4, 4, 3, 32);
  expect_error(chunk_kda_fwd_intra(a, bad.views()), "Aqk must be contiguous");
}

}  // namespace
}  // namespace recops
