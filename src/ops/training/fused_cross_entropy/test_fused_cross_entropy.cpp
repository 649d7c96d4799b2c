// training/fused_cross_entropy/test_fused_cross_entropy.cpp: the C++ tests of the op beyond
// `recops check`'s cases: refusals and their messages, and small values by hand (torch-free;
// built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/fused_cross_entropy/fused_cross_entropy.h"
#include "recops/tensor.h"

namespace recops {
namespace {

struct Fixture {
  Tensor logits = Tensor::empty({2, 3}, DType::fp32);
  Tensor labels = Tensor::empty({2}, DType::int64);
  Tensor loss = Tensor::empty({}, DType::fp32);
  Tensor z = Tensor::empty({}, DType::fp32);
  Tensor lse = Tensor::empty({2}, DType::fp32);
  std::vector<char> ws = std::vector<char>(64);
  Fixture() {
    const float v[6] = {1, 2, 3, 0, 0, 0};
    std::copy(v, v + 6, static_cast<float*>(logits.data()));
    static_cast<int64_t*>(labels.data())[0] = 2;
    static_cast<int64_t*>(labels.data())[1] = -100;
  }
  FusedCrossEntropyArgs args() const {
    FusedCrossEntropyArgs a;
    a.logits = logits.view();
    a.labels = labels.view();
    return a;
  }
  Context ctx() {
    Context c;
    c.workspace = ws.data();
    c.workspace_bytes = ws.size();
    return c;
  }
};

// training::PolyExp (the exp of the cpu_avx2 row loops) against exp in double: within 2 ulp of
// fp32 over [-87.33, 88.37] (2^-22 relative), 1 at 0, 0 below -87.33 and at -inf, NaN for NaN, +inf
// above ln(FLT_MAX).
TEST(FusedCrossEntropy, PolyExpIsWithinTwoUlp) {
  using E = ops::training::PolyExp;
  double worst = 0;
  for (int64_t i = 0; i <= 2000000; ++i) {
    const float x = static_cast<float>(-87.33 + (88.37 + 87.33) * static_cast<double>(i) / 2e6);
    const double want = std::exp(static_cast<double>(x));
    const double got = E::exp(x);
    worst = std::max(worst, std::fabs(got - want) / want);
  }
  EXPECT_LE(worst, std::ldexp(1.0, -22)) << "worst relative error " << worst;
  EXPECT_EQ(E::exp(0.0f), 1.0f);
  EXPECT_EQ(E::exp(-87.5f), 0.0f);
  EXPECT_EQ(E::exp(-1e30f), 0.0f);
  EXPECT_EQ(E::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(E::exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(E::exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(E::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(E::exp(1e30f), std::numeric_limits<float>::infinity());  // as std::exp, not clamped
  EXPECT_EQ(E::exp(-0.5), std::exp(-0.5));                           // fp64 is std::exp
}

// cpu_avx2 (where this CPU has it) and cpu_generic give the same loss to fp32 rounding.
TEST(FusedCrossEntropy, Avx2AndGenericAgree) {
  const int64_t N = 7, V = 5000;
  Tensor logits = Tensor::empty({N, V}, DType::fp32);
  Tensor labels = Tensor::empty({N}, DType::int64);
  float* z = static_cast<float*>(logits.data());
  for (int64_t i = 0; i < N * V; ++i) z[i] = static_cast<float>(std::sin(0.37 * i) * 12.0);
  z[3 * V + 11] = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < N; ++i) static_cast<int64_t*>(labels.data())[i] = (i * 977) % V;
  double loss[2] = {0, 0};
  const char* impls[2] = {"cpu_avx2", "cpu_generic"};
  for (int k = 0; k < 2; ++k) {
    Tensor loss_t = Tensor::empty({}, DType::fp32), zl = Tensor::empty({}, DType::fp32);
    Tensor lse = Tensor::empty({N}, DType::fp32);
    FusedCrossEntropyArgs a;
    a.logits = logits.view();
    a.labels = labels.view();
    std::vector<char> ws(fused_cross_entropy_workspace_bytes(a, true));
    Context c;
    c.workspace = ws.data();
    c.workspace_bytes = ws.size();
    c.impl = impls[k];
    const Status st = fused_cross_entropy_fwd(a, loss_t.view(), zl.view(), lse.view(), c);
    if (!st.ok() && k == 0) GTEST_SKIP() << "cpu_avx2 does not run here: " << st.message();
    ASSERT_TRUE(st.ok()) << st.message();
    loss[k] = *static_cast<const float*>(loss_t.data());
  }
  EXPECT_NEAR(loss[0], loss[1], 1e-5 * std::fabs(loss[1]));
}

// A -inf logit away from the label (a masked vocabulary entry): the loss is log(1 + e) for the
// row [0, -inf, 1] with label 0 (torch's value; the smoothing term is absent when eps = 0, not
// 0 * inf = NaN), and +inf with eps = 0.1 (torch: the mean log-probability is -inf), on every CPU
// implementation and the reference.
TEST(FusedCrossEntropy, MaskedLogitLeavesTheLossFinite) {
  Tensor logits = Tensor::empty({1, 3}, DType::fp32);
  Tensor labels = Tensor::empty({1}, DType::int64);
  const float v[3] = {0, -std::numeric_limits<float>::infinity(), 1};
  std::copy(v, v + 3, static_cast<float*>(logits.data()));
  static_cast<int64_t*>(labels.data())[0] = 0;
  for (const char* impl : {"reference", "cpu_avx2", "cpu_generic"}) {
    for (const double eps : {0.0, 0.1}) {
      FusedCrossEntropyArgs a;
      a.logits = logits.view();
      a.labels = labels.view();
      a.label_smoothing = eps;
      Tensor loss = Tensor::empty({}, DType::fp32), zl = Tensor::empty({}, DType::fp32);
      std::vector<char> ws(fused_cross_entropy_workspace_bytes(a, false));
      Context c;
      c.workspace = ws.data();
      c.workspace_bytes = ws.size();
      c.impl = impl;
      const Status st = fused_cross_entropy(a, loss.view(), zl.view(), c);
      if (!st.ok() && std::string(impl) == "cpu_avx2") continue;  // no AVX2 here
      ASSERT_TRUE(st.ok()) << impl << ": " << st.message();
      const float got = *static_cast<const float*>(loss.data());
      if (eps == 0)
        EXPECT_NEAR(got, std::log1p(std::exp(1.0)), 1e-6) << impl;
      else
        EXPECT_EQ(got, std::numeric_limits<float>::infinity()) << impl;
    }
  }
}

TEST(FusedCrossEntropy, MeanOverRowsNotIgnored) {
  Fixture f;
  ASSERT_TRUE(
      fused_cross_entropy_fwd(f.args(), f.loss.view(), f.z.view(), f.lse.view(), f.ctx()).ok());
  const double lse0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(static_cast<const float*>(f.loss.data())[0], lse0 - 3.0, 1e-6);
  EXPECT_NEAR(static_cast<const float*>(f.lse.data())[0], lse0, 1e-6);
  EXPECT_EQ(static_cast<const float*>(f.lse.data())[1], 0.0f);  // the ignored row
}

TEST(FusedCrossEntropy, AllIgnoredMeanIsZero) {
  Fixture f;
  static_cast<int64_t*>(f.labels.data())[0] = -100;
  ASSERT_TRUE(fused_cross_entropy(f.args(), f.loss.view(), f.z.view(), f.ctx()).ok());
  EXPECT_EQ(static_cast<const float*>(f.loss.data())[0], 0.0f);
}

TEST(FusedCrossEntropy, RefusesLabelOutOfRange) {
  Fixture f;
  static_cast<int64_t*>(f.labels.data())[1] = 3;
  const Status s = fused_cross_entropy(f.args(), f.loss.view(), f.z.view(), f.ctx());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("labels[1]=3 must be in [0, V) = [0, 3) or ignore_index (-100)"),
            std::string::npos)
      << s.message();
}

TEST(FusedCrossEntropy, RefusesASmallWorkspace) {
  Fixture f;
  Context c;
  const Status s = fused_cross_entropy(f.args(), f.loss.view(), f.z.view(), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the workspace must hold"), std::string::npos) << s.message();
}

TEST(FusedCrossEntropy, RefusesAWrongLseInTheBackward) {
  Fixture f;
  FusedCrossEntropyBwdArgs b;
  Tensor g = Tensor::empty({}, DType::fp32);
  Tensor lse = Tensor::empty({3}, DType::fp32);
  Tensor dz = Tensor::empty({2, 3}, DType::fp32);
  b.grad_loss = g.view();
  b.logits = f.logits.view();
  b.labels = f.labels.view();
  b.lse = lse.view();
  const Status s = fused_cross_entropy_bwd(b, dz.view(), f.ctx());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lse must be contiguous fp32[2]"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace recops
