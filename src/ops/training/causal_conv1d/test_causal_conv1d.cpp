// training/causal_conv1d/test_causal_conv1d.cpp: the C++ tests of the op beyond `recops check`'s
// cases: refusals and their messages, the C++ API's channel-last y (torch-free; built into
// tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/causal_conv1d/causal_conv1d.h"
#include "recops/tensor.h"

namespace recops {
namespace {

void fill(Tensor& t, float start, float step) {
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.view().numel(); ++i) p[i] = start + step * static_cast<float>(i);
}

TEST(CausalConv1d, RefusesFinalStateWithoutTheFlag) {
  Tensor x = Tensor::empty({1, 2, 5}, DType::fp32);
  Tensor w = Tensor::empty({2, 4}, DType::fp32);
  Tensor y = Tensor::empty({1, 2, 5}, DType::fp32);
  Tensor fs = Tensor::empty({1, 2, 3}, DType::fp32);
  CausalConv1dArgs a;
  a.x = x.view();
  a.weight = w.view();
  const TensorView f = fs.view();
  const Status s = causal_conv1d(a, y.view(), &f);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("final_state must be given exactly when output_final_state"),
            std::string::npos)
      << s.message();
}

TEST(CausalConv1d, RefusesGradFinalStateWhenNotProduced) {
  Tensor x = Tensor::empty({1, 2, 5}, DType::fp32);
  Tensor w = Tensor::empty({2, 4}, DType::fp32);
  Tensor gfs = Tensor::empty({1, 2, 3}, DType::fp32);
  Tensor dx = Tensor::empty({1, 2, 5}, DType::fp32);
  Tensor dw = Tensor::empty({2, 4}, DType::fp32);
  CausalConv1dBwdArgs a;
  a.grad_y = x.view();
  a.grad_final_state = gfs.view();
  a.x = x.view();
  a.weight = w.view();
  const Status s = causal_conv1d_bwd(a, dx.view(), dw.view(), nullptr, nullptr, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("grad_final_state must be an empty [0] tensor"), std::string::npos)
      << s.message();
}

// The C++ API writes y through its strides: a channel-last y equals the channel-first one.
TEST(CausalConv1d, ChannelLastOutputMatches) {
  const int64_t B = 2, D = 3, T = 7;
  Tensor x = Tensor::empty({B, D, T}, DType::fp32);
  Tensor w = Tensor::empty({D, 4}, DType::fp32);
  fill(x, -1.0f, 0.05f);
  fill(w, 0.5f, -0.1f);
  Tensor y1 = Tensor::empty({B, D, T}, DType::fp32);
  Tensor y2 = Tensor::empty({B, T, D}, DType::fp32);
  CausalConv1dArgs a;
  a.x = x.view();
  a.weight = w.view();
  a.activation = ConvActivation::silu;
  ASSERT_TRUE(causal_conv1d(a, y1.view(), nullptr).ok());
  const TensorView cl(y2.data(), DType::fp32, Device::cpu(), {B, D, T}, {T * D, 1, D});
  ASSERT_TRUE(causal_conv1d(a, cl, nullptr).ok());
  const float* p1 = static_cast<const float*>(y1.data());
  const float* p2 = static_cast<const float*>(y2.data());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t t = 0; t < T; ++t) EXPECT_EQ(p1[(b * D + d) * T + t], p2[(b * T + t) * D + d]);
}

}  // namespace
}  // namespace recops
