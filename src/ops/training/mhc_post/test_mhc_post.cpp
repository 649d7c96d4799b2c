// training/mhc_post/test_mhc_post.cpp: the C++ tests beyond `recops check`'s cases: refusals
// and their messages, and one token by hand in both comb layouts (torch-free; built into
// recops_tests).
#include <gtest/gtest.h>

#include <string>

#include "ops/training/mhc_post/mhc_post.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(MhcPost, RefusesMismatchedLeadingDims) {
  Tensor X = Tensor::empty({3, 2, 5}, DType::fp32);
  Tensor y = Tensor::empty({2, 5}, DType::fp32);
  Tensor post = Tensor::empty({3, 2}, DType::fp32);
  Tensor comb = Tensor::empty({3, 2, 2}, DType::fp32);
  Tensor out = Tensor::empty({3, 2, 5}, DType::fp32);
  const Status s = mhc_post({X.view(), y.view(), post.view(), comb.view()}, out.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mhc_post: y must be contiguous fp32[3, 5]"), std::string::npos)
      << s.message();
}

// n = 2, C = 1: out_j = post_j·y + Σ_i comb[i, j]·X_i, and with out_in comb[j, i].
TEST(MhcPost, OneTokenByHandInBothLayouts) {
  Tensor X = Tensor::empty({2, 1}, DType::fp32);
  Tensor y = Tensor::empty({1}, DType::fp32);
  Tensor post = Tensor::empty({2}, DType::fp32);
  Tensor comb = Tensor::empty({2, 2}, DType::fp32);
  Tensor out = Tensor::empty({2, 1}, DType::fp32);
  float* px = static_cast<float*>(X.data());
  float* pc = static_cast<float*>(comb.data());
  float* pp = static_cast<float*>(post.data());
  px[0] = 1, px[1] = 10;
  static_cast<float*>(y.data())[0] = 100;
  pp[0] = 1, pp[1] = 2;
  pc[0] = 0.5f, pc[1] = 0.25f, pc[2] = 2, pc[3] = 4;  // comb[0,0], comb[0,1], comb[1,0], comb[1,1]
  const float* po = static_cast<const float*>(out.data());
  ASSERT_TRUE(mhc_post({X.view(), y.view(), post.view(), comb.view()}, out.view()).ok());
  EXPECT_EQ(po[0], 100 + 0.5f * 1 + 2 * 10);   // j = 0: comb[0,0]·X_0 + comb[1,0]·X_1
  EXPECT_EQ(po[1], 200 + 0.25f * 1 + 4 * 10);  // j = 1: comb[0,1]·X_0 + comb[1,1]·X_1
  ASSERT_TRUE(
      mhc_post({X.view(), y.view(), post.view(), comb.view(), MhcCombLayout::out_in}, out.view())
          .ok());
  EXPECT_EQ(po[0], 100 + 0.5f * 1 + 0.25f * 10);  // j = 0: comb[0,0]·X_0 + comb[0,1]·X_1
  EXPECT_EQ(po[1], 200 + 2 * 1 + 4 * 10);         // j = 1: comb[1,0]·X_0 + comb[1,1]·X_1
}

}  // namespace
}  // namespace recops
