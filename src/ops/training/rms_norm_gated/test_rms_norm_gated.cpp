// training/rms_norm_gated/test_rms_norm_gated.cpp: C++ tests beyond `recops check`'s cases: the
// group_size and activation rules, a one-group row by hand, and the CUDA launch shape of packed
// short rows (host code; torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>

#include "ops/training/common/cuda/row_tiles.h"
#include "ops/training/rms_norm_gated/rms_norm_gated.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(RmsNormGated, GroupSizeMustDivideD) {
  Tensor x = Tensor::empty({3, 6}, DType::fp32);
  Tensor y = Tensor::empty({3, 6}, DType::fp32);
  RmsNormGatedArgs a{x.view(), x.view()};
  a.group_size = 4;
  const Status s = rms_norm_gated(a, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rms_norm_gated: group_size=4 must be 0 (= D) or divide D=6"),
            std::string::npos)
      << s.message();
}

TEST(RmsNormGated, ActivationOutOfRange) {
  Tensor x = Tensor::empty({2, 4}, DType::fp32);
  Tensor y = Tensor::empty({2, 4}, DType::fp32);
  RmsNormGatedArgs a{x.view(), x.view()};
  a.activation = static_cast<GateActivation>(7);
  const Status s = rms_norm_gated(a, y.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("activation=7 must be silu (0), sigmoid (1) or swish (2"),
            std::string::npos)
      << s.message();
}

TEST(RmsNormGated, OneRowByHand) {
  // x = (3, -4): mean of squares 12.5, eps 0; z = 0 with sigmoid: a = 1/2; groups of 1: n = ±1.
  Tensor x = Tensor::empty({1, 2}, DType::fp32);
  Tensor z = Tensor::empty({1, 2}, DType::fp32);
  Tensor y = Tensor::empty({1, 2}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  float* pz = static_cast<float*>(z.data());
  px[0] = 3.0f, px[1] = -4.0f, pz[0] = pz[1] = 0.0f;
  RmsNormGatedArgs a{x.view(), z.view()};
  a.eps = 0.0;
  a.activation = GateActivation::sigmoid;
  ASSERT_TRUE(rms_norm_gated(a, y.view()).ok());
  const float* py = static_cast<const float*>(y.data());
  const float r = 1.0f / std::sqrt(12.5f);
  EXPECT_FLOAT_EQ(py[0], 3.0f * r * 0.5f);
  EXPECT_FLOAT_EQ(py[1], -4.0f * r * 0.5f);
  a.group_size = 1;
  ASSERT_TRUE(rms_norm_gated(a, y.view()).ok());
  EXPECT_FLOAT_EQ(py[0], 0.5f);
  EXPECT_FLOAT_EQ(py[1], -0.5f);
}

TEST(RmsNormGated, PackedRowWidths) {
  using ops::training_dev::row_launch_packed;
  constexpr int kPer = ops::training_dev::kRowPackedPerLane;
  // D = 128 bf16 (16 vectors): 8 lanes a row, 32 rows per 256-thread CTA.
  auto s = row_launch_packed(1 << 20, 16, 0, kPer);
  EXPECT_EQ(s.width, 8);
  EXPECT_EQ(s.block, 256);
  EXPECT_EQ(s.blocks * (s.block / s.width), s.owners);
  EXPECT_EQ(row_launch_packed(100, 1, 0, kPer).width, 1);
  EXPECT_EQ(row_launch_packed(100, 3, 0, kPer).width, 2);
  EXPECT_EQ(row_launch_packed(100, 64, 0, kPer).width, 32);
  EXPECT_EQ(row_launch_packed(100, 65, 0, kPer).width, 32);   // a warp: up to 4 vectors a lane
  EXPECT_EQ(row_launch_packed(100, 129, 0, kPer).width, 64);  // a CTA
  // Fixed owners (the column-sum chunks): one per row group, every owner in the grid.
  s = row_launch_packed(4099, 16, 512, kPer);
  EXPECT_EQ(s.owners, 512);
  EXPECT_GE(s.blocks * (s.block / s.width), 512);
}

}  // namespace
}  // namespace recops
