// jagged/permute_2D_sparse_data/test_permute_2D_sparse_data.cpp: torch-free checks of the C++ API
// beyond `recops check` (whose outputs always match the shape function): a worked example, and
// the refusals of the caller's layout and outputs that the binding never produces.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/jagged/permute_2D_sparse_data/permute_2D_sparse_data.h"
#include "recops/tensor.h"

namespace recops {
namespace {

Tensor ints(const std::vector<int64_t>& v, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::int64);
  for (size_t i = 0; i < v.size(); ++i) static_cast<int64_t*>(t.data())[i] = v[i];
  return t;
}

// lengths [3, 2] = [[1, 2], [0, 1], [2, 0]]: values rows 0 | 1 2 | - | 3 | 4 5 | -.
struct Example {
  Tensor permute = ints({2, 0, 2}, {3});
  Tensor lengths = ints({1, 2, 0, 1, 2, 0}, {3, 2});
  Tensor values = ints({10, 11, 12, 13, 14, 15}, {6});
  PermuteSparseDataArgs args() const { return {permute.view(), lengths.view(), values.view()}; }
};

std::string message(const Status& st) {
  return st.ok() ? "ok" : st.message();
}

TEST(PermuteSparseData, TwoDExample) {
  Example e;
  Shape ls, vs;
  ASSERT_TRUE(permute_2D_sparse_data_shape(e.args(), &ls, &vs).ok());
  EXPECT_EQ(ls, (Shape{3, 2}));
  EXPECT_EQ(vs, (Shape{7}));  // rows 2, 0, 2 hold 2 + 3 + 2 values
  Tensor pl = Tensor::empty(ls, DType::int64), pv = Tensor::empty(vs, DType::int64);
  ASSERT_TRUE(permute_2D_sparse_data(e.args(), pl.view(), pv.view(), nullptr).ok());
  const auto* l = static_cast<const int64_t*>(pl.data());
  const auto* v = static_cast<const int64_t*>(pv.data());
  EXPECT_EQ(std::vector<int64_t>(l, l + 6), (std::vector<int64_t>{2, 0, 1, 2, 2, 0}));
  EXPECT_EQ(std::vector<int64_t>(v, v + 7), (std::vector<int64_t>{14, 15, 10, 11, 12, 14, 15}));
}

TEST(PermuteSparseData, RefusesCallerLayouts) {
  Example e;
  Tensor pl = Tensor::empty({3, 2}, DType::int64), pv = Tensor::empty({7}, DType::int64);
  // 2-D lengths viewed column-major (the binding would copy them).
  PermuteSparseDataArgs a = e.args();
  a.lengths = TensorView(e.lengths.data(), DType::int64, a.lengths.device, {3, 2}, {1, 3});
  EXPECT_NE(message(permute_2D_sparse_data(a, pl.view(), pv.view(), nullptr))
                .find("permute_2D_sparse_data: lengths must be contiguous [T, B]"),
            std::string::npos);
  // Weights given without permuted_weights.
  Tensor w = Tensor::empty({6}, DType::fp32);
  a = e.args();
  a.weights = w.view();
  EXPECT_NE(message(permute_2D_sparse_data(a, pl.view(), pv.view(), nullptr))
                .find("permuted_weights must be given exactly when weights are"),
            std::string::npos);
  // An output of the wrong size or dtype.
  Tensor bad = Tensor::empty({3, 2}, DType::int32);
  EXPECT_NE(message(permute_2D_sparse_data(e.args(), bad.view(), pv.view(), nullptr))
                .find("permuted_lengths must be contiguous [3, 2] of int64"),
            std::string::npos);
  // The 1-D op takes 1-D lengths only.
  Shape ls, vs;
  EXPECT_NE(message(permute_1D_sparse_data_shape(e.args(), &ls, &vs))
                .find("permute_1D_sparse_data: lengths must be 1-D"),
            std::string::npos);
}

}  // namespace
}  // namespace recops
