// Tensor::empty and checked_nbytes: a byte count that overflows int64 is an error naming the shape,
// never a short buffer (issue 21, memory safety 1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "recops/tensor.h"

namespace recops {
namespace {

TEST(Tensor, CheckedNbytesCountsBytes) {
  int64_t b = -1;
  ASSERT_TRUE(checked_nbytes("t", {3, 5}, DType::bf16, &b).ok());
  EXPECT_EQ(b, 30);
  ASSERT_TRUE(checked_nbytes("t", {}, DType::fp64, &b).ok());
  EXPECT_EQ(b, 8);
  // Empty: no bytes whatever the other extents, even when their product overflows.
  ASSERT_TRUE(checked_nbytes("t", {0, int64_t{1} << 62, 7}, DType::fp32, &b).ok());
  EXPECT_EQ(b, 0);
}

TEST(Tensor, CheckedNbytesRefusesOverflow) {
  int64_t b = -1;
  // 2^62 elements of 4 bytes: 2^64 bytes (the case of issue 21: max_seq_len = 2^62).
  const Status s = checked_nbytes("op: output out", {1, int64_t{1} << 62, 2}, DType::fp32, &b);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::invalid_argument);
  EXPECT_NE(s.message().find("op: output out: shape [1, 4611686018427387904, 2] of fp32 needs "
                             "more than 2^63-1 bytes"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(b, -1);
  // Just fits: 2^62 one-byte elements, then one element too many bytes.
  ASSERT_TRUE(checked_nbytes("t", {int64_t{1} << 62}, DType::uint8, &b).ok());
  EXPECT_FALSE(checked_nbytes("t", {int64_t{1} << 62}, DType::fp16, &b).ok());
  EXPECT_FALSE(checked_nbytes("t", {INT64_MAX, 2}, DType::uint8, &b).ok());
  EXPECT_FALSE(checked_nbytes("t", {-1}, DType::fp32, &b).ok());
  EXPECT_FALSE(checked_nbytes("t", Shape(kMaxDims + 1, 1), DType::fp32, &b).ok());
}

TEST(Tensor, EmptyThrowsInsteadOfAShortBuffer) {
  try {
    Tensor::empty({1, int64_t{1} << 62, 2}, DType::fp32);
    FAIL() << "allocated a tensor of 2^64 bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Tensor::empty: shape [1, 4611686018427387904, 2]"),
              std::string::npos)
        << e.what();
  }
  const Tensor t = Tensor::empty({0, int64_t{1} << 62}, DType::fp32);
  EXPECT_EQ(t.nbytes(), 0);
  EXPECT_NE(t.data(), nullptr);
}

}  // namespace
}  // namespace recops
