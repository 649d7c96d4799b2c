// training/clipped_swiglu/test_clipped_swiglu.cpp: the C++ tests beyond `recops check`'s cases:
// refusals and their messages, and a few values by hand (torch-free; built into recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "ops/training/clipped_swiglu/clipped_swiglu.h"
#include "recops/tensor.h"

namespace recops {
namespace {

// clipped_swiglu on fp32 x and y of these shapes fails with a message containing `text`.
void expect_refusal(const Shape& x_shape, const Shape& y_shape, const std::string& text) {
  Tensor x = Tensor::empty(x_shape, DType::fp32);
  Tensor y = Tensor::empty(y_shape, DType::fp32);
  const Status s = clipped_swiglu({x.view()}, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(ClippedSwiglu, RefusesOddLastDim) {
  expect_refusal({2, 3}, {2, 1}, "clipped_swiglu: x's last dim must be even");
}

TEST(ClippedSwiglu, RefusesWrongOutputShape) {
  expect_refusal({2, 4}, {2, 4}, "y must be contiguous, fp32 with shape [2, 2]");
}

TEST(ClippedSwiglu, ClampsAndKeepsNan) {
  // interleaved pairs (g, u): (10, 0.5) clips g to 7; (1, -9) clips u to -7; (NaN, 1).
  Tensor x = Tensor::empty({6}, DType::fp32);
  Tensor y = Tensor::empty({3}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float v[6] = {10.0f, 0.5f, 1.0f, -9.0f, nan, 1.0f};
  for (int i = 0; i < 6; ++i) px[i] = v[i];
  ASSERT_TRUE(clipped_swiglu({x.view()}, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  const auto f = [](double g, double u) { return g / (1 + std::exp(-1.702 * g)) * (u + 1); };
  EXPECT_NEAR(py[0], f(7, 0.5), 1e-5);
  EXPECT_NEAR(py[1], f(1, -7), 1e-5);
  EXPECT_TRUE(std::isnan(py[2]));
}

}  // namespace
}  // namespace recops
