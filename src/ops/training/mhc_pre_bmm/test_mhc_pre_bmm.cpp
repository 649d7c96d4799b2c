// training/mhc_pre_bmm/test_mhc_pre_bmm.cpp: the C++ tests beyond `recops check`'s cases:
// refusals and their messages, and one token by hand (torch-free; built into recops_tests).
#include <gtest/gtest.h>

#include <string>

#include "ops/training/mhc_pre_bmm/mhc_pre_bmm.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(MhcPreBmm, RefusesWrongOutputDtype) {
  Tensor h = Tensor::empty({3, 2}, DType::fp32);
  Tensor X = Tensor::empty({3, 2, 5}, DType::bf16);
  Tensor y = Tensor::empty({3, 5}, DType::bf16);  // the default out_dtype is fp32
  const Status s = mhc_pre_bmm({h.view(), X.view()}, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mhc_pre_bmm: y must be contiguous fp32[3, 5]"), std::string::npos)
      << s.message();
}

// n = 2, C = 2, by hand: y = h_0·X_0 + h_1·X_1; backward dX_i = dy·h_i, dh_i = <dy, X_i>.
TEST(MhcPreBmm, OneTokenByHand) {
  Tensor h = Tensor::empty({2}, DType::fp32);
  Tensor X = Tensor::empty({2, 2}, DType::fp32);
  Tensor y = Tensor::empty({2}, DType::fp32);
  float* ph = static_cast<float*>(h.data());
  float* px = static_cast<float*>(X.data());
  ph[0] = 0.5f, ph[1] = 2;
  px[0] = 1, px[1] = 3, px[2] = 10, px[3] = -4;
  ASSERT_TRUE(mhc_pre_bmm({h.view(), X.view()}, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  EXPECT_EQ(py[0], 0.5f * 1 + 2 * 10);
  EXPECT_EQ(py[1], 0.5f * 3 + 2 * -4);
  Tensor dy = Tensor::empty({2}, DType::fp32);
  Tensor dh = Tensor::empty({2}, DType::fp32);
  Tensor dX = Tensor::empty({2, 2}, DType::fp32);
  static_cast<float*>(dy.data())[0] = 1;
  static_cast<float*>(dy.data())[1] = -2;
  ASSERT_TRUE(mhc_pre_bmm_bwd({dy.view(), h.view(), X.view()}, dh.view(), dX.view()).ok());
  const float* pdh = static_cast<const float*>(dh.data());
  const float* pdx = static_cast<const float*>(dX.data());
  EXPECT_EQ(pdh[0], 1 * 1 + -2 * 3);
  EXPECT_EQ(pdh[1], 1 * 10 + -2 * -4);
  EXPECT_EQ(pdx[0], 0.5f);
  EXPECT_EQ(pdx[1], -1.0f);
  EXPECT_EQ(pdx[2], 2.0f);
  EXPECT_EQ(pdx[3], -4.0f);
}

}  // namespace
}  // namespace recops
