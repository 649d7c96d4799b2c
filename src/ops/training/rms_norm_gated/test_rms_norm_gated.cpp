// training/rms_norm_gated/test_rms_norm_gated.cpp: C++ tests beyond `recops check`'s cases: the
// group_size and activation rules, a one-group row by hand, cpu_avx2 against cpu_generic (and
// poly_exp64 against std::exp), and the CUDA launch shape of packed short rows (host code;
// torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/rms_norm_gated/rms_norm_gated.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(RmsNormGated, GroupSizeMustDivideD) {
  Tensor x = Tensor::empty({3, 6}, DType::fp32);
  Tensor y = Tensor::empty({3, 6}, DType::fp32);
  RmsNormGatedArgs a{x.view(), x.view()};
  a.group_size = 4;
  const Status s = rms_norm_gated(a, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rms_norm_gated: group_size=4 must be 0 (= D) or divide D=6"),
            std::string::npos)
      << s.message();
}

TEST(RmsNormGated, ActivationOutOfRange) {
  Tensor x = Tensor::empty({2, 4}, DType::fp32);
  Tensor y = Tensor::empty({2, 4}, DType::fp32);
  RmsNormGatedArgs a{x.view(), x.view()};
  a.activation = static_cast<GateActivation>(7);
  const Status s = rms_norm_gated(a, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("activation=7 must be silu (0), sigmoid (1) or swish (2"),
            std::string::npos)
      << s.message();
}

TEST(RmsNormGated, OneRowByHand) {
  // x = (3, -4): mean of squares 12.5, eps 0; z = 0 with sigmoid: a = 1/2; groups of 1: n = ±1.
  Tensor x = Tensor::empty({1, 2}, DType::fp32);
  Tensor z = Tensor::empty({1, 2}, DType::fp32);
  Tensor y = Tensor::empty({1, 2}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  float* pz = static_cast<float*>(z.data());
  px[0] = 3.0f, px[1] = -4.0f, pz[0] = pz[1] = 0.0f;
  RmsNormGatedArgs a{x.view(), z.view()};
  a.eps = 0.0;
  a.activation = GateActivation::sigmoid;
  ASSERT_TRUE(rms_norm_gated(a, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  const float r = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(py[0], 3.0f * r * 0.5f);
  EXPECT_FLOAT_EQ(py[1], -4.0f * r * 0.5f);
  a.group_size = 1;
  ASSERT_TRUE(rms_norm_gated(a, y.view()).ok());
  EXPECT_FLOAT_EQ(py[0], 0.5f);
  EXPECT_FLOAT_EQ(py[1], -0.5f);
}

// poly_exp64 (cpu_avx2's exp) within 1 ulp of std::exp over the normal range; +inf, 0 and NaN at
// the ends.
TEST(RmsNormGated, PolyExp64MatchesStdExp) {
  using ops::training::poly_exp64;
  std::mt19937_64 g(7);
  std::uniform_real_distribution<double> u(-708.39, 709.78);
  for (int i = 0; i < 200000; ++i) {
    const double x = i % 2 ? u(g) : u(g) / 40.0, want = std::exp(x), got = poly_exp64(x);
    EXPECT_LE(std::fabs(got - want), std::nextafter(want, INFINITY) - want) << x;
  }
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(poly_exp64(710.0), inf);
  EXPECT_EQ(poly_exp64(inf), inf);
  EXPECT_EQ(poly_exp64(-inf), 0.0);
  EXPECT_EQ(poly_exp64(-800.0), 0.0);
  EXPECT_EQ(poly_exp64(0.0), 1.0);
  EXPECT_TRUE(std::isfinite(poly_exp64(709.78)));
  EXPECT_TRUE(std::isnan(poly_exp64(std::numeric_limits<double>::quiet_NaN())));
}

// cpu_avx2 (where this CPU has it) and cpu_generic agree to a few fp32 ulps, forward and backward,
// for both gate placements and activations, with weight, bias and groups.
TEST(RmsNormGated, Avx2AndGenericAgree) {
  const int64_t R = 37, D = 96;
  std::mt19937 g(11);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  auto fill = [&](Tensor& t) {
    float* p = static_cast<float*>(t.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = nd(g);
  };
  Tensor x = Tensor::empty({R, D}, DType::fp32), z = Tensor::empty({R, D}, DType::fp32);
  Tensor dy = Tensor::empty({R, D}, DType::fp32);
  Tensor w = Tensor::empty({D}, DType::fp32), b = Tensor::empty({D}, DType::fp32);
  for (Tensor* t : {&x, &z, &dy, &w, &b}) fill(*t);
  static_cast<float*>(z.data())[5] = 800.0f;  // σ saturates: exp(-z) underflows, exp(z) overflows
  static_cast<float*>(z.data())[6] = -800.0f;
  for (const bool before : {true, false})
    for (const GateActivation act : {GateActivation::silu, GateActivation::sigmoid}) {
      std::vector<std::vector<float>> out[2];
      for (int k = 0; k < 2; ++k) {
        Context c;
        c.impl = k == 0 ? "cpu_avx2" : "cpu_generic";
        Tensor y = Tensor::empty({R, D}, DType::fp32), dx = Tensor::empty({R, D}, DType::fp32);
        Tensor dz = Tensor::empty({R, D}, DType::fp32);
        Tensor dw = Tensor::empty({D}, DType::fp32), db = Tensor::empty({D}, DType::fp32);
        RmsNormGatedArgs a{x.view(), z.view(), w.view(), b.view()};
        a.activation = act;
        a.group_size = 32;
        a.norm_before_gate = before;
        const Status st = rms_norm_gated(a, y.view(), c);
        if (!st.ok() && k == 0) GTEST_SKIP() << "cpu_avx2 does not run here: " << st.message();
        ASSERT_TRUE(st.ok()) << st.message();
        RmsNormGatedBwdArgs ba{dy.view(), x.view(), z.view(), w.view(), b.view()};
        ba.activation = act;
        ba.group_size = 32;
        ba.norm_before_gate = before;
        std::vector<char> ws(rms_norm_gated_bwd_workspace_bytes(ba));
        c.workspace = ws.data();
        c.workspace_bytes = ws.size();
        const TensorView dwv = dw.view(), dbv = db.view();
        const Status bs = rms_norm_gated_bwd(ba, dx.view(), dz.view(), &dwv, &dbv, c);
        ASSERT_TRUE(bs.ok()) << bs.message();
        for (Tensor* t : {&y, &dx, &dz, &dw, &db}) {
          const float* p = static_cast<const float*>(t->data());
          out[k].emplace_back(p, p + t->numel());
        }
      }
      for (size_t o = 0; o < out[0].size(); ++o)
        for (size_t i = 0; i < out[0][o].size(); ++i) {
          const float a = out[0][o][i], e = out[1][o][i];
          EXPECT_NEAR(a, e, 4e-7f * (std::fabs(e) + 1e-3f))
              << "output " << o << " element " << i << " before=" << before;
        }
    }
}

TEST(RmsNormGated, PackedRowWidths) {
  using ops::training_dev::row_launch_packed;
  constexpr int kPer = ops::training_dev::kRowPackedPerLane;
  // D = 128 bf16 (16 vectors): 8 lanes a row, 32 rows per 256-thread CTA.
  auto s = row_launch_packed(1 << 20, 16, 0, kPer);
  EXPECT_EQ(s.width, 8);
  EXPECT_EQ(s.block, 256);
  EXPECT_EQ(s.blocks * (s.block / s.width), s.owners);
  EXPECT_EQ(row_launch_packed(100, 1, 0, kPer).width, 1);
  EXPECT_EQ(row_launch_packed(100, 3, 0, kPer).width, 2);
  EXPECT_EQ(row_launch_packed(100, 64, 0, kPer).width, 32);
  EXPECT_EQ(row_launch_packed(100, 65, 0, kPer).width, 32);   // a warp: up to 4 vectors a lane
  EXPECT_EQ(row_launch_packed(100, 129, 0, kPer).width, 64);  // a CTA
  // Fixed owners (the column-sum chunks): one per row group, every owner in the grid.
  s = row_launch_packed(4099, 16, 512, kPer);
  EXPECT_EQ(s.owners, 512);
  EXPECT_GE(s.blocks * (s.block / s.width), 512);
}

}  // namespace
}  // namespace recops
