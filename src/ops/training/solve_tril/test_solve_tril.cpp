// training/solve_tril/test_solve_tril.cpp: the C++ tests of solve_tril beyond `recops check`'s
// cases: refusals and their messages, and (I + A)·Ai = I on a chunk with a tail, per
// implementation (torch-free; built into tests/cpp's recops_tests).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ops/training/solve_tril/solve_tril.h"
#include "recops/tensor.h"

namespace recops {
namespace {

SolveTrilArgs args_of(const Tensor& a) {
  SolveTrilArgs r;
  r.A = a.view();
  return r;
}

TEST(SolveTril, RefusesBadChunkSize) {
  Tensor a = Tensor::empty({1, 4, 2, 48}, DType::fp32);
  Tensor o = Tensor::empty({1, 4, 2, 48}, DType::fp32);
  const Status s = solve_tril(args_of(a), o.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must be 16, 32 or 64; got 48"), std::string::npos) << s.message();
}

TEST(SolveTril, RefusesChunkSizeMismatch) {
  Tensor a = Tensor::empty({1, 4, 2, 32}, DType::fp32);
  Tensor o = Tensor::empty({1, 4, 2, 32}, DType::fp32);
  SolveTrilArgs args = args_of(a);
  args.chunk_size = 64;
  const Status s = solve_tril(args, o.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chunk_size=64 must equal A's last dim 32"), std::string::npos)
      << s.message();
}

TEST(SolveTril, RefusesWrongOutputDtype) {
  Tensor a = Tensor::empty({1, 4, 2, 16}, DType::fp32);
  Tensor o = Tensor::empty({1, 4, 2, 16}, DType::bf16);
  const Status s = solve_tril(args_of(a), o.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("Ai must be contiguous fp32"), std::string::npos) << s.message();
}

// (I + A)·Ai = I on each chunk (T = 64 + 37 at BT = 64: one full chunk and a tail), garbage in
// the upper part ignored; Ai zero above the diagonal, one on it.
void check_inverse(const char* impl, int64_t bt) {
  const int64_t T = bt + 37 % bt, H = 3;
  Tensor a = Tensor::empty({1, T, H, bt}, DType::fp32);
  Tensor o = Tensor::empty({1, T, H, bt}, DType::fp32);
  float* ad = static_cast<float*>(a.data());
  for (int64_t i = 0; i < a.numel(); ++i) ad[i] = 0.05f * std::sin(0.7f * static_cast<float>(i));
  Context ctx;
  ctx.impl = impl;
  ASSERT_TRUE(solve_tril(args_of(a), o.view(), ctx).ok());
  const float* od = static_cast<const float*>(o.data());
  for (int64_t lo = 0; lo < T; lo += bt) {
    const int64_t L = std::min(bt, T - lo);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < bt; ++j) {
          const auto at = [&](int64_t r, int64_t c) { return ((lo + r) * H + h) * bt + c; };
          if (j > i) {
            EXPECT_EQ(od[at(i, j)], 0.0f);
            continue;
          }
          double s = od[at(i, j)];  // row i of (I + A) times column j of Ai
          for (int64_t k = j; k < i; ++k) s += double(ad[at(i, k)]) * od[at(k, j)];
          EXPECT_NEAR(s, i == j ? 1.0 : 0.0, 1e-5) << impl << " bt=" << bt << " i=" << i;
        }
  }
}

TEST(SolveTril, InvertsPerChunk) {
  for (const char* impl : {"cpu_generic", "reference"})
    for (int64_t bt : {16, 32, 64}) check_inverse(impl, bt);
}

}  // namespace
}  // namespace recops
