// training/norm_mul_dropout/test_norm_mul_dropout.cpp: C++ tests beyond `recops check`'s cases:
// the RNG's first values (pinned, so a change of the written definition is noticed), and the
// keep rate (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include "ops/training/common/counter_rng.h"

namespace recops {
namespace {
using ops::training::counter_uniform;
using ops::training::dropout_keep;

TEST(NormMulDropout, RngIsAFixedFunction) {
  // splitmix64 of seed 0: the finaliser of 0x9E3779B97F4A7C15 is 0xE220A8397B1DCDAF.
  EXPECT_EQ(counter_uniform(0, 0), static_cast<float>(0xE220A8397B1DCDAFull >> 40) / 16777216.0f);
  EXPECT_NE(counter_uniform(1, 0), counter_uniform(0, 0));
  EXPECT_NE(counter_uniform(0, 1), counter_uniform(0, 0));
}

TEST(NormMulDropout, KeepRate) {
  int kept = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) kept += dropout_keep(42, static_cast<uint64_t>(i), 0.3f) ? 1 : 0;
  EXPECT_NEAR(kept / double(n), 0.7, 0.01);
  for (int i = 0; i < 1000; ++i) EXPECT_TRUE(dropout_keep(42, static_cast<uint64_t>(i), 0.0f));
}

}  // namespace
}  // namespace recops
