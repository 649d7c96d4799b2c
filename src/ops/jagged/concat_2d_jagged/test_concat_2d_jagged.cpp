// jagged/concat_2d_jagged/test_concat_2d_jagged.cpp: torch-free checks beyond `recops check`'s
// cases: refusal messages and a small worked example of each mode.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/jagged/concat_2d_jagged/concat_2d_jagged.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor ints(const std::vector<int64_t>& v, Shape shape = {}) {
  Tensor t =
      Tensor::empty(shape.empty() ? Shape{static_cast<int64_t>(v.size())} : shape, DType::int64);
  for (size_t i = 0; i < v.size(); ++i) static_cast<int64_t*>(t.data())[i] = v[i];
  return t;
}

std::vector<int64_t> values(const Tensor& t) {
  const auto* p = static_cast<const int64_t*>(t.data());
  return std::vector<int64_t>(p, p + t.view().numel());
}

bool has(const Status& s, const char* text) {
  return !s.ok() && s.message().find(text) != std::string::npos;
}

TEST(Concat2dJagged, PrefixAndDenseSide) {
  // A jagged [3, 1] (lengths 1, 2); B dense [2, 2, 1]; k = 1: [B0[0], A0, B0[1] | B1[0], A1, B1[1]]
  Tensor a = ints({10, 11, 12}, {3, 1}), oa = ints({0, 1, 3});
  Tensor b = ints({20, 21, 22, 23}, {2, 2, 1});
  Tensor out = Tensor::empty({7, 1}, DType::int64);
  ASSERT_TRUE(
      concat_2d_jagged({a.view(), oa.view(), b.view(), std::nullopt, 1, false}, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<int64_t>{20, 10, 21, 22, 11, 12, 23}));
}

TEST(Concat2dJagged, ReplaceAndItsAdjoint) {
  // A lengths 3, 1; B lengths 1, 2: sample 0 = [A0, A1, B0]; sample 1 = [B2] (B's last row).
  Tensor a = ints({1, 2, 3, 4}, {4, 1}), oa = ints({0, 3, 4});
  Tensor b = ints({7, 8, 9}, {3, 1}), ob = ints({0, 1, 3});
  Tensor out = Tensor::empty({4, 1}, DType::int64);
  Concat2dJaggedBwdArgs args;
  args.values_a = a.view();
  args.offsets_a = oa.view();
  args.values_b = b.view();
  args.offsets_b = ob.view();
  args.is_replace = true;
  ASSERT_TRUE(concat_2d_jagged(args, out.view()).ok());
  EXPECT_EQ(values(out), (std::vector<int64_t>{1, 2, 7, 9}));
  Tensor g = ints({5, 6, 7, 8}, {4, 1});
  Tensor ga = Tensor::empty({4, 1}, DType::int64), gb = Tensor::empty({3, 1}, DType::int64);
  args.grad = g.view();
  ASSERT_TRUE(concat_2d_jagged_bwd(args, ga.view(), gb.view()).ok());
  EXPECT_EQ(values(ga), (std::vector<int64_t>{5, 6, 0, 0}));
  EXPECT_EQ(values(gb), (std::vector<int64_t>{7, 0, 8}));
}

TEST(Concat2dJagged, Refusals) {
  Tensor a = ints({1, 2, 3}, {3, 1}), oa = ints({0, 1, 3});
  Tensor out = Tensor::empty({6, 1}, DType::int64);
  EXPECT_TRUE(
      has(concat_2d_jagged({a.view(), oa.view(), a.view(), oa.view(), -2, false}, out.view()),
          "n_prefix_from_right=-2 must be >= 0"));
  Tensor dense = ints({1, 2, 3}, {3, 1, 1});
  EXPECT_TRUE(
      has(concat_2d_jagged({a.view(), oa.view(), dense.view(), std::nullopt, 0, false}, out.view()),
          "batch sizes differ"));
  EXPECT_TRUE(
      has(concat_2d_jagged({a.view(), oa.view(), a.view(), std::nullopt, 0, false}, out.view()),
          "values_b must be dense [B, S, D] when offsets_b is None"));
  Tensor bad = ints({0, 2, 1});
  EXPECT_TRUE(
      has(concat_2d_jagged({a.view(), bad.view(), a.view(), oa.view(), 0, false}, out.view()),
          "offsets_a"));
}

}  // namespace
}  // namespace recops
