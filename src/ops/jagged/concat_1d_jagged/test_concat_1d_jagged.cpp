// jagged/concat_1d_jagged/test_concat_1d_jagged.cpp: torch-free checks beyond `recops check`'s
// cases: a worked example of each part kind, the split, and refusal messages.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/jagged/concat_1d_jagged/concat_1d_jagged.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor ints(const std::vector<int64_t>& v, Shape shape = {}) {
  Tensor t =
      Tensor::empty(shape.empty() ? Shape{static_cast<int64_t>(v.size())} : shape, DType::int64);
  for (size_t i = 0; i < v.size(); ++i) static_cast<int64_t*>(t.data())[i] = v[i];
  return t;
}

std::vector<int64_t> contents(const Tensor& t) {
  const auto* p = static_cast<const int64_t*>(t.data());
  return std::vector<int64_t>(p, p + t.view().numel());
}

bool has(const Status& s, const char* text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

TEST(Concat1dJagged, JaggedJaggedAndItsSplit) {
  // A lengths 2, 0, 1; B lengths 0, 3, 1: [A0 | B1 | A2, B2]
  Tensor a = ints({10, 11, 12}), oa = ints({0, 2, 2, 3});
  Tensor b = ints({20, 21, 22, 23}), ob = ints({0, 0, 3, 4});
  Tensor out = ints({-1, -1, -1, -1, -1, -1, -1}), off = ints({-1, -1, -1, -1});
  Concat1dJaggedBwdArgs args;
  args.values_a = a.view();
  args.offsets_a = oa.view();
  args.values_b = b.view();
  args.offsets_b = ob.view();
  ASSERT_TRUE(concat_1d_jagged(args, out.view(), off.view()).ok());
  EXPECT_EQ(contents(out), (std::vector<int64_t>{10, 11, 20, 21, 22, 12, 23}));
  EXPECT_EQ(contents(off), (std::vector<int64_t>{0, 2, 5, 7}));
  Tensor ga = ints({-1, -1, -1}), gb = ints({-1, -1, -1, -1});
  args.grad = out.view();
  ASSERT_TRUE(concat_1d_jagged_bwd(args, ga.view(), gb.view()).ok());
  EXPECT_EQ(contents(ga), contents(a));
  EXPECT_EQ(contents(gb), contents(b));
}

TEST(Concat1dJagged, DensePrefixStridedAndDenseSuffix) {
  // A dense [B] read with stride 2 (SLL's prefix); B jagged: [a0, B0 | a1 | a2, B2]
  Tensor a_buf = ints({1, -9, 2, -9, 3, -9});
  const TensorView a(a_buf.data(), DType::int64, Device::cpu(), {3}, {2});
  Tensor b = ints({7, 8, 9}), ob = ints({0, 2, 2, 3});
  Tensor out = ints({0, 0, 0, 0, 0, 0}), off = ints({0, 0, 0, 0});
  ASSERT_TRUE(
      concat_1d_jagged({a, std::nullopt, b.view(), ob.view()}, out.view(), off.view()).ok());
  EXPECT_EQ(contents(out), (std::vector<int64_t>{1, 7, 8, 2, 3, 9}));
  EXPECT_EQ(contents(off), (std::vector<int64_t>{0, 3, 4, 6}));
  // B dense [3, 2] after A jagged: [B0 | A1, B1 | B2] with A lengths 0, 1, 0
  Tensor a1 = ints({5}), oa1 = ints({0, 0, 1, 1});
  Tensor d = ints({30, 31, 40, 41, 50, 51}, {3, 2});
  Tensor out2 = ints({0, 0, 0, 0, 0, 0, 0}), off2 = ints({0, 0, 0, 0});
  ASSERT_TRUE(
      concat_1d_jagged({a1.view(), oa1.view(), d.view(), std::nullopt}, out2.view(), off2.view())
          .ok());
  EXPECT_EQ(contents(out2), (std::vector<int64_t>{30, 31, 5, 40, 41, 50, 51}));
  EXPECT_EQ(contents(off2), (std::vector<int64_t>{0, 2, 5, 7}));
}

TEST(Concat1dJagged, EmptyBatchWritesOneOffset) {
  Tensor v = Tensor::empty({0}, DType::fp32), o = ints({0});
  Tensor out = Tensor::empty({0}, DType::fp32), off = ints({-1});
  ASSERT_TRUE(
      concat_1d_jagged({v.view(), o.view(), v.view(), o.view()}, out.view(), off.view()).ok());
  EXPECT_EQ(contents(off), (std::vector<int64_t>{0}));
}

TEST(Concat1dJagged, Refusals) {
  Tensor a = ints({1, 2, 3}), oa = ints({0, 1, 3});
  Tensor out = Tensor::empty({6}, DType::int64), off = ints({0, 0, 0});
  Tensor wide = ints({1, 2, 3}, {3, 1});
  EXPECT_TRUE(
      has(concat_1d_jagged({wide.view(), oa.view(), a.view(), oa.view()}, out.view(), off.view()),
          "values_a must be 1-D [total_L] when offsets_a is given"));
  Tensor dense3 = ints({1, 2, 3});  // B = 3 dense, A has 2 samples
  EXPECT_TRUE(has(
      concat_1d_jagged({a.view(), oa.view(), dense3.view(), std::nullopt}, out.view(), off.view()),
      "the batch sizes differ: 2 samples in values_a/offsets_a, 3 in values_b"));
  Tensor bad = ints({0, 2, 1});
  EXPECT_TRUE(
      has(concat_1d_jagged({a.view(), bad.view(), a.view(), oa.view()}, out.view(), off.view()),
          "offsets_a[2]=1 < offsets_a[1]=2"));
  Tensor short_off = ints({0, 0});
  EXPECT_TRUE(has(
      concat_1d_jagged({a.view(), oa.view(), a.view(), oa.view()}, out.view(), short_off.view()),
      "offsets must be contiguous [3] int64"));
  // 2^31 + 1 elements (a dense part of zero strides) cannot take int32 offsets.
  Tensor one = Tensor::empty({1}, DType::uint8);
  const TensorView huge(one.data(), DType::uint8, Device::cpu(), {2, int64_t{1} << 30}, {0, 0});
  Tensor ob32 = Tensor::empty({3}, DType::int32);
  Shape vs, os;
  DType odt = DType::int64;
  EXPECT_TRUE(
      has(concat_1d_jagged_shape({huge, std::nullopt, one.view(), ob32.view()}, &vs, &os, &odt),
          "more than int32 offsets can hold"));
}

}  // namespace
}  // namespace recops
