// training/chunk_scaled_dot_kkt/test_chunk_scaled_dot_kkt.cpp: the C++ tests of the op beyond `recops check`'s cases:
// the refusals and their messages (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(ChunkScaledDotKkt, RefusesIntegerInput) {
  Tensor x = Tensor::empty({4}, DType::int32);
  Tensor out = Tensor::empty({4}, DType::int32);
  const Status s = chunk_scaled_dot_kkt({x.view(), 2.0}, out.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("x must be fp64, fp32, fp16 or bf16"), std::string::npos)
      << s.message();
}

TEST(ChunkScaledDotKkt, RefusesWrongOutputShape) {
  Tensor x = Tensor::empty({4}, DType::fp32);
  Tensor out = Tensor::empty({5}, DType::fp32);
  const Status s = chunk_scaled_dot_kkt({x.view(), 2.0}, out.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("out must be contiguous with x's shape"), std::string::npos);
}

TEST(ChunkScaledDotKkt, ScalesOnTheCpu) {
  Tensor x = Tensor::empty({3}, DType::fp32);
  Tensor out = Tensor::empty({3}, DType::fp32);
  float* px = static_cast<float*>(x.data());
  px[0] = 1.0f, px[1] = -2.0f, px[2] = 0.5f;
  ASSERT_TRUE(chunk_scaled_dot_kkt({x.view(), -3.0}, out.view()).ok());
  const float* po = static_cast<const float*>(out.data());
  EXPECT_EQ(po[0], -3.0f);
  EXPECT_EQ(po[1], 6.0f);
  EXPECT_EQ(po[2], -1.5f);
}

}  // namespace
}  // namespace recops
