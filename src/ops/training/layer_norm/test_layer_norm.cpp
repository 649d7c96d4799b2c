// training/layer_norm/test_layer_norm.cpp: C++ tests beyond `recops check`'s cases: the weight
// and bias rules, the column-gradient contract, and one row by hand (torch-free; built into
// tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/layer_norm/layer_norm.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(LayerNorm, WeightMustMatchD) {
  Tensor x = Tensor::empty({3, 6}, DType::fp32);
  Tensor w = Tensor::empty({5}, DType::fp32);
  Tensor y = Tensor::empty({3, 6}, DType::fp32);
  LayerNormArgs a{x.view(), w.view()};
  const Status s = swish_layer_norm(a, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("swish_layer_norm: weight must be contiguous fp32[6]"),
            std::string::npos)
      << s.message();
}

TEST(LayerNorm, DweightOnlyWithWeight) {
  Tensor x = Tensor::empty({2, 4}, DType::fp32);
  Tensor dx = Tensor::empty({2, 4}, DType::fp32);
  Tensor dw = Tensor::empty({4}, DType::fp32);
  LayerNormBwdArgs a;
  a.grad_y = x.view();
  a.x = x.view();
  const TensorView dwv = dw.view();
  const Status s = layer_norm_bwd(a, dx.view(), &dwv, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("layer_norm_bwd: dweight must be given exactly when weight is given"),
            std::string::npos)
      << s.message();
}

TEST(LayerNorm, OneRowByHand) {
  // x = (1, 3): mean 2, variance 1, eps 0: n = (-1, 1); swish: y = σ(n)·x.
  Tensor x = Tensor::empty({1, 2}, DType::fp64);
  Tensor y = Tensor::empty({1, 2}, DType::fp64);
  double* px = static_cast<double*>(x.data());
  px[0] = 1.0, px[1] = 3.0;
  LayerNormArgs a{x.view()};
  a.eps = 0;
  for (const char* impl : {"cpu_generic", "reference"}) {
    Context ctx;
    ctx.impl = impl;
    ASSERT_TRUE(layer_norm(a, y.view(), ctx).ok());
    const double* py = static_cast<const double*>(y.data());
    EXPECT_DOUBLE_EQ(py[0], -1.0) << impl;
    EXPECT_DOUBLE_EQ(py[1], 1.0) << impl;
    ASSERT_TRUE(swish_layer_norm(a, y.view(), ctx).ok());
    EXPECT_NEAR(py[0], 1.0 / (1.0 + std::exp(1.0)), 1e-15) << impl;
    EXPECT_NEAR(py[1], 3.0 / (1.0 + std::exp(-1.0)), 1e-15) << impl;
  }
}

}  // namespace
}  // namespace recops
