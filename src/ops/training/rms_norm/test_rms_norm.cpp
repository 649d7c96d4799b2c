// training/rms_norm/test_rms_norm.cpp: C++ tests beyond `recops check`'s cases: the refusals the
// case files cannot express (weight shape and dtype, dweight / workspace contract) and their
// messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/rms_norm/rms_norm.h"
#include "recops/tensor.h"

namespace recops {
namespace {

bool has(const Status& s, const char* text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

TEST(RmsNorm, RefusesWeightOfWrongShapeOrDtype) {
  Tensor x = Tensor::empty({3, 4}, DType::fp32);
  Tensor y = Tensor::empty({3, 4}, DType::fp32);
  Tensor w5 = Tensor::empty({5}, DType::fp32);
  Tensor wh = Tensor::empty({4}, DType::fp16);
  Status s = rms_norm({x.view(), w5.view(), 1e-6, 0.0}, y.view());
  EXPECT_TRUE(has(s, "rms_norm: weight must be [D] = [4]")) << s.message();
  s = rms_norm({x.view(), wh.view(), 1e-6, 0.0}, y.view());
  EXPECT_TRUE(has(s, "rms_norm: weight must have x's dtype (fp32)")) << s.message();
}

TEST(RmsNorm, BwdNeedsDweightAndWorkspaceWithWeight) {
  Tensor x = Tensor::empty({3, 4}, DType::fp32);
  Tensor w = Tensor::empty({4}, DType::fp32);
  Tensor dx = Tensor::empty({3, 4}, DType::fp32);
  Tensor dw = Tensor::empty({4}, DType::fp32);
  RmsNormBwdArgs a{x.view(), x.view(), w.view()};
  Status s = rms_norm_bwd(a, dx.view(), nullptr);
  EXPECT_TRUE(has(s, "rms_norm_bwd: dweight must be given exactly when")) << s.message();
  const TensorView dwv = dw.view();
  s = rms_norm_bwd(a, dx.view(), &dwv);
  EXPECT_TRUE(has(s, "rms_norm_bwd: the workspace must hold")) << s.message();
  EXPECT_GT(rms_norm_bwd_workspace_bytes(a), 0u);
  a.want_dweight = false;
  EXPECT_EQ(rms_norm_bwd_workspace_bytes(a), 0u);
}

TEST(RmsNorm, RstdBwdChecksGradDtype) {
  Tensor x = Tensor::empty({3, 4}, DType::bf16);
  Tensor gr = Tensor::empty({3, 1}, DType::bf16);  // r is fp32 unless out_dtype says otherwise
  Tensor dx = Tensor::empty({3, 4}, DType::bf16);
  const Status s = rms_norm_rstd_bwd({gr.view(), x.view(), 1e-6, std::nullopt}, dx.view());
  EXPECT_TRUE(has(s, "rms_norm_rstd_bwd: grad_r must be contiguous fp32")) << s.message();
}

TEST(RmsNorm, UnitRowOnTheCpu) {
  Tensor x = Tensor::empty({1, 2}, DType::fp32);
  Tensor y = Tensor::empty({1, 2}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  px[0] = 3.0f, px[1] = -4.0f;  // mean of squares 12.5
  ASSERT_TRUE(rms_norm({x.view(), std::nullopt, 0.0, 0.0}, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  EXPECT_NEAR(py[0], 3.0 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(py[1], -4.0 / std::sqrt(12.5), 1e-6);
}

}  // namespace
}  // namespace recops
