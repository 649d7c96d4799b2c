// training/inplace_rope/test_inplace_rope.cpp: the C++ tests of the op beyond `recops check`'s
// cases (torch-free; built into tests/cpp's recops_tests): the kit's schema of a mutated
// argument, the refusals and their messages, the in-place write of a strided view and its
// padding, and the backward as the opposite rotation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/kit/op_def.h"
#include "ops/training/inplace_rope/inplace_rope.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(InplaceRope, KitSchemaAliasesTheMutatedArgument) {
  const kit::OpDef* d = kit::find_def("inplace_rope_");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->schema(),
            "inplace_rope_(Tensor(a!) x, Tensor cos, Tensor sin, bool inverse=False) -> "
            "Tensor(a!)");
  const kit::OpDef* b = kit::find_def("inplace_rope_bwd");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->schema(),
            "inplace_rope_bwd(Tensor dy, Tensor cos, Tensor sin, bool inverse=False) -> Tensor");
}

TEST(InplaceRope, KitSchemaLettersSeveralMutatedArguments) {
  struct A {
    TensorView p, q, r;
  };
  const kit::OpDef d = kit::Def<A>("demo_two_", "demo")
                           .arg<&A::p>("p", {.mutated = true})
                           .arg<&A::q>("q")
                           .arg<&A::r>("r", {.mutated = true})
                           .out_mutated("r", "r")
                           .out("s")
                           .out_mutated("p", "p");
  EXPECT_EQ(d.schema(),
            "demo_two_(Tensor(a!) p, Tensor q, Tensor(b!) r) -> (Tensor(b!), Tensor, Tensor(a!))");
}

// x [B, L, H, Dh] fp32 filled with 1, 2, 3, ...; cos/sin [L, half] of angles 0.1·(l + i + 1).
struct Problem {
  Tensor x, cos, sin;
  Problem(const Shape& xs, int64_t L, int64_t half)
      : x(Tensor::empty(xs, DType::fp32)),
        cos(Tensor::empty({L, half}, DType::fp32)),
        sin(Tensor::empty({L, half}, DType::fp32)) {
    auto* px = static_cast<float*>(x.data());
    for (int64_t e = 0; e < x.numel(); ++e) px[e] = static_cast<float>(e % 13) - 6.0f;
    auto* pc = static_cast<float*>(cos.data());
    auto* ps = static_cast<float*>(sin.data());
    for (int64_t l = 0; l < L; ++l)
      for (int64_t i = 0; i < half; ++i) {
        pc[l * half + i] = static_cast<float>(std::cos(0.1 * static_cast<double>(l + i + 1)));
        ps[l * half + i] = static_cast<float>(std::sin(0.1 * static_cast<double>(l + i + 1)));
      }
  }
};

Status call(const TensorView& x, const Problem& p, bool inverse = false) {
  return inplace_rope_({x, p.cos.view(), p.sin.view(), inverse});
}

void expect_refused(const Status& s, const std::string& text) {
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

TEST(InplaceRope, RefusesWithTheArgumentAndTheRule) {
  Problem p({2, 3, 2, 8}, 3, 5);  // R = 10 > Dh = 8
  expect_refused(call(p.x.view(), p), "inplace_rope_: the rope width R = 2 * cos.shape[-1] = 10");
  Problem q({2, 3, 2, 8}, 4, 2);  // cos for L = 4
  expect_refused(call(q.x.view(), q), "cos.shape[-2] = 4 must equal x's L = 3");
  Tensor xi = Tensor::empty({2, 3, 2, 8}, DType::int32);
  Problem r({2, 3, 2, 8}, 3, 2);
  expect_refused(call(xi.view(), r), "x must be fp64, fp32, fp16 or bf16, got int32");
  // Last stride 2: a view of every other channel.
  Problem w({2, 3, 2, 16}, 3, 2);
  const TensorView every_other(w.x.data(), DType::fp32, Device::cpu(), {2, 3, 2, 8},
                               {96, 32, 16, 2});
  expect_refused(call(every_other, w), "x's last dim must have unit stride");
}

// An empty cos may carry a huge last dim: R = 2·half is tested without overflowing int64 (UBSan
// in fuzz_training2_entries: tests/fuzz/corpus/fuzz_training2_entries/found_rope_width_overflow).
TEST(InplaceRope, RefusesHugeRopeWidthOfEmptyCos) {
  float buf[4] = {};
  const TensorView x(buf, DType::fp32, Device::cpu(), {2, 0, 2, 8});
  for (const int64_t half : {int64_t{1} << 62, INT64_MAX - 6}) {
    const TensorView c(buf, DType::fp32, Device::cpu(), {0, half});
    expect_refused(inplace_rope_({x, c, c, false}),
                   "inplace_rope_: the rope width R = 2 * cos.shape[-1] = 2 * " +
                       std::to_string(half) + " must be <= x's head dim Dh = 8");
    const Tensor dx = Tensor::empty({2, 0, 2, 8}, DType::fp32);
    expect_refused(inplace_rope_bwd({x, c, c, false}, dx.view()), "must be <= dy's head dim Dh");
  }
  const TensorView c(buf, DType::fp32, Device::cpu(), {0, int64_t{1} << 61});
  expect_refused(inplace_rope_({x, c, c, false}),
                 "R = 2 * cos.shape[-1] = 4611686018427387904 must be <= x's head dim Dh = 8");
}

TEST(InplaceRope, EmptyIsValid) {
  Problem p({0, 3, 2, 8}, 3, 4);
  EXPECT_TRUE(call(p.x.view(), p).ok());
  Problem q({3, 0, 8}, 3, 2);
  EXPECT_TRUE(call(q.x.view(), q).ok());
}

// A transposed view (stored [B, H, L, Dh]) is written in place; the nope channels and the
// elements outside the view stay; the values are the rotation.
TEST(InplaceRope, WritesATransposedViewInPlace) {
  const int64_t B = 2, L = 3, H = 2, Dh = 6, half = 2;
  Problem p({B, H, L, Dh}, L, half);  // the storage
  std::vector<float> before(static_cast<const float*>(p.x.data()),
                            static_cast<const float*>(p.x.data()) + p.x.numel());
  const TensorView xv(p.x.data(), DType::fp32, Device::cpu(), {B, L, H, Dh},
                      {H * L * Dh, Dh, L * Dh, 1});
  ASSERT_TRUE(call(xv, p).ok());
  const auto* after = static_cast<const float*>(p.x.data());
  const auto* pc = static_cast<const float*>(p.cos.data());
  const auto* ps = static_cast<const float*>(p.sin.data());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t l = 0; l < L; ++l) {
        const int64_t o = ((b * H + h) * L + l) * Dh;
        for (int64_t c = 0; c < Dh - 2 * half; ++c) EXPECT_EQ(after[o + c], before[o + c]);
        for (int64_t i = 0; i < half; ++i) {
          const int64_t c0 = o + Dh - 2 * half + 2 * i;
          const double x0 = before[c0], x1 = before[c0 + 1];
          const double cs = pc[l * half + i], sn = ps[l * half + i];
          EXPECT_FLOAT_EQ(after[c0], static_cast<float>(x0 * cs - x1 * sn));
          EXPECT_FLOAT_EQ(after[c0 + 1], static_cast<float>(x1 * cs + x0 * sn));
        }
      }
}

// inverse undoes the forward (to fp32 rounding), and the backward of the forward is the
// inverse rotation of dy into a new dense tensor, the nope channels copied.
TEST(InplaceRope, InverseAndBackwardRotateBack) {
  Problem p({2, 4, 3, 10}, 4, 3);
  std::vector<float> x0(static_cast<const float*>(p.x.data()),
                        static_cast<const float*>(p.x.data()) + p.x.numel());
  ASSERT_TRUE(call(p.x.view(), p).ok());
  Tensor dx = Tensor::empty(p.x.shape(), DType::fp32);
  ASSERT_TRUE(inplace_rope_bwd({p.x.view(), p.cos.view(), p.sin.view(), false}, dx.view()).ok());
  ASSERT_TRUE(call(p.x.view(), p, /*inverse=*/true).ok());
  const auto* back = static_cast<const float*>(p.x.data());
  const auto* pdx = static_cast<const float*>(dx.data());
  for (int64_t e = 0; e < p.x.numel(); ++e) {
    EXPECT_NEAR(back[e], x0[static_cast<size_t>(e)], 1e-5) << e;
    EXPECT_EQ(pdx[e], back[e]) << e;  // the same rotation, the same roundings
  }
}

}  // namespace
}  // namespace recops
