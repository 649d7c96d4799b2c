// jagged/multi_head_jagged_flash_attention/test_multi_head_jagged_flash_attention.cpp: torch-free
// checks beyond `recops check`'s cases: the backward's lse rules and a closed-form forward.
#include <gtest/gtest.h>

#include <cmath>

#include "ops/jagged/multi_head_jagged_flash_attention/multi_head_jagged_flash_attention.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor offsets(std::initializer_list<int64_t> v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int64);
  int64_t* p = static_cast<int64_t*>(t.data());
  for (int64_t x : v) *p++ = x;
  return t;
}

Tensor filled(const Shape& s, float x) {
  Tensor t = Tensor::empty(s, DType::fp32);
  float* p = static_cast<float*>(t.data());
  for (int64_t i = 0; i < t.view().numel(); ++i) p[i] = x;
  return t;
}

TEST(MultiHeadJaggedFlashAttention, BackwardRefusesNonFp32Lse) {
  Tensor q = filled({1, 3, 2}, 0.5f), off = offsets({0, 3});
  Tensor lse = Tensor::empty({1, 3}, DType::fp16);
  Tensor dq = filled({1, 3, 2}, 0), dk = filled({1, 3, 2}, 0), dv = filled({1, 3, 2}, 0);
  const Status s = multi_head_jagged_flash_attention_bwd(
      {q.view(), q.view(), q.view(), q.view(), off.view(), q.view(), lse.view(), 3}, dq.view(),
      dk.view(), dv.view());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("multi_head_jagged_flash_attention_bwd: lse must be fp32 [1, 3]"),
            std::string::npos)
      << s.message();
}

// Equal scores s = 0.5 over n_b = 4 valid keys, v = 1, max_L = 4: p = 1/16 on each key, so
// out = 4/16; lse = 0.5 + log 4; the truncated row is 0 with lse -inf.
TEST(MultiHeadJaggedFlashAttention, UniformScoresClosedForm) {
  Tensor q = filled({1, 5, 2}, 0.5f), v = filled({1, 5, 2}, 1.0f), off = offsets({0, 5});
  Tensor out = filled({1, 5, 2}, NAN), lse = filled({1, 5}, NAN);
  ASSERT_TRUE(multi_head_jagged_flash_attention_fwd({q.view(), q.view(), v.view(), off.view(), 4},
                                                    out.view(), lse.view())
                  .ok());
  const float* o = static_cast<const float*>(out.data());
  const float* l = static_cast<const float*>(lse.data());
  for (int m = 0; m < 4; ++m) {
    EXPECT_FLOAT_EQ(o[2 * m], 1.0f / 4) << m;  // Σ_n (1/4) / 4 over 4 keys
    EXPECT_FLOAT_EQ(l[m], 0.5f + std::log(4.0f)) << m;
  }
  EXPECT_EQ(o[8], 0.0f);
  EXPECT_EQ(o[9], 0.0f);
  EXPECT_TRUE(std::isinf(l[4]) && l[4] < 0);
}

}  // namespace
}  // namespace recops
