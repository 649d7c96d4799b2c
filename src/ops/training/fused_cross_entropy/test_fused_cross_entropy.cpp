// training/fused_cross_entropy/test_fused_cross_entropy.cpp: the C++ tests of the op beyond
// `recops check`'s cases: refusals and their messages, and small values by hand (torch-free;
// built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

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
