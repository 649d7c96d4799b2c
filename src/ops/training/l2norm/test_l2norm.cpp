// training/l2norm/test_l2norm.cpp: C++ tests beyond `recops check`'s cases: the grad_y dtype
// rule with out_dtype and a unit row by hand (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/l2norm/l2norm.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(L2norm, BwdGradMustHaveTheOutDtype) {
  Tensor x = Tensor::empty({3, 4}, DType::bf16);
  Tensor g = Tensor::empty({3, 4}, DType::bf16);
  Tensor dx = Tensor::empty({3, 4}, DType::bf16);
  const Status s = l2norm_bwd({g.view(), x.view(), 1e-6, DType::fp32}, dx.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("l2norm_bwd: grad_y must be contiguous fp32"), std::string::npos)
      << s.message();
}

TEST(L2norm, UnitRowOnTheCpu) {
  Tensor x = Tensor::empty({1, 2}, DType::fp32);
  Tensor y = Tensor::empty({1, 2}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  px[0] = 3.0f, px[1] = -4.0f;  // sum of squares 25: eps is added to it, not to the mean
  ASSERT_TRUE(l2norm({x.view(), 0.0, std::nullopt}, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  EXPECT_FLOAT_EQ(py[0], 0.6f);
  EXPECT_FLOAT_EQ(py[1], -0.8f);
}

}  // namespace
}  // namespace recops
