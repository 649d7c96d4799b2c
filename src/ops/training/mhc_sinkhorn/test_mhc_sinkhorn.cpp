// training/mhc_sinkhorn/test_mhc_sinkhorn.cpp: the C++ tests beyond `recops check`'s cases:
// refusals and their messages, and properties of the result (torch-free; built into
// recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/training/mhc_sinkhorn/mhc_sinkhorn.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(MhcSinkhorn, RefusesWrongOutputShape) {
  Tensor l = Tensor::empty({2, 4, 4}, DType::fp32);
  Tensor P = Tensor::empty({2, 4, 3}, DType::fp32);
  const Status s = mhc_sinkhorn({l.view()}, P.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mhc_sinkhorn: P must be contiguous, fp32 with shape [2, 4, 4]"),
            std::string::npos)
      << s.message();
}

TEST(MhcSinkhorn, RefusesZeroIters) {
  Tensor l = Tensor::empty({4, 4}, DType::fp32);
  Tensor P = Tensor::empty({4, 4}, DType::fp32);
  const Status s = mhc_sinkhorn({l.view(), 0, 1e-6}, P.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("iters must be >= 1 and <= 65536, got 0"), std::string::npos)
      << s.message();
}

// With eps = 0 and enough rounds, P is doubly stochastic; each row's order follows the logits'.
TEST(MhcSinkhorn, ConvergesToDoublyStochastic) {
  Tensor l = Tensor::empty({4, 4}, DType::fp64);
  Tensor P = Tensor::empty({4, 4}, DType::fp64);
  double* pl = static_cast<double*>(l.data());
  for (int k = 0; k < 16; ++k) pl[k] = std::sin(1.7 * k) * 2;
  ASSERT_TRUE(mhc_sinkhorn({l.view(), 200, 0.0}, P.view()).ok());
  const double* pp = static_cast<const double*>(P.data());
  for (int a = 0; a < 4; ++a) {
    double row = 0, col = 0;
    for (int b = 0; b < 4; ++b) row += pp[a * 4 + b], col += pp[b * 4 + a];
    EXPECT_NEAR(row, 1.0, 1e-9);
    EXPECT_NEAR(col, 1.0, 1e-12);
  }
}

}  // namespace
}  // namespace recops
