// jagged/array_jagged_bmm_jagged_out/test_array_jagged_bmm_jagged_out.cpp: torch-free C++ tests
// beyond `recops check`'s cases (built into recops_tests): both jagged² matmuls on one hand-worked
// sample with N = 3 > max_seq_len = 2 (rows strided by N, not by the window), forward and
// backward, and the refusal of y_offsets that disagree with seq_lengths.
#include <gtest/gtest.h>

#include <vector>

#include "ops/jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.h"
#include "ops/jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.h"
#include "recops/tensor.h"

namespace recops {
namespace {

template <class T>
Tensor make(const Shape& shape, DType t, const std::vector<T>& v) {
  Tensor x = Tensor::empty(shape, t);
  for (size_t i = 0; i < v.size(); ++i) static_cast<T*>(x.data())[i] = v[i];
  return x;
}
std::vector<double> values(const Tensor& t) {
  const auto* d = static_cast<const double*>(t.data());
  return std::vector<double>(d, d + t.view().numel());
}

// One sample, N = 3, D = 1, max_seq_len = 2: the window is rows/columns 0 and 1 of the block.
struct Sample {
  Tensor sq = make<double>({9}, DType::fp64, {1, 2, 100, 3, 4, 100, 100, 100, 100});
  Tensor y = make<double>({3, 1}, DType::fp64, {5, 6, 100});
  Tensor len = make<int64_t>({1}, DType::int64, {3});
  Tensor off = make<int64_t>({2}, DType::int64, {0, 3});
  Tensor sq_off = make<int64_t>({2}, DType::int64, {0, 9});
};

TEST(ArrayJaggedBmmJaggedOut, HandWorkedWindowAndBackward) {
  Sample s;
  Tensor z = Tensor::empty({3, 1}, DType::fp64);
  ASSERT_TRUE(
      array_jagged_bmm_jagged_out(
          {s.sq.view(), s.y.view(), s.len.view(), s.sq_off.view(), s.off.view(), 2}, z.view())
          .ok());
  EXPECT_EQ(values(z), (std::vector<double>{1 * 5 + 2 * 6, 3 * 5 + 4 * 6, 0}));
  // grad = [1, 10, 7]: dx_b[m, k] = grad[m] y[k] on the window; dy[k] = sum_m x[m, k] grad[m].
  Tensor g = make<double>({3, 1}, DType::fp64, {1, 10, 7});
  Tensor dx = Tensor::empty({9}, DType::fp64), dy = Tensor::empty({3, 1}, DType::fp64);
  ASSERT_TRUE(array_jagged_bmm_jagged_out_bwd({g.view(), s.sq.view(), s.y.view(), s.len.view(),
                                               s.sq_off.view(), s.off.view(), 2},
                                              dx.view(), dy.view())
                  .ok());
  EXPECT_EQ(values(dx), (std::vector<double>{5, 6, 0, 50, 60, 0, 0, 0, 0}));
  EXPECT_EQ(values(dy), (std::vector<double>{1 + 30, 2 + 40, 0}));
}

TEST(JaggedJaggedBmmJaggedOut, HandWorkedWindowAndBackward) {
  Sample s;
  Tensor x = make<double>({3, 1}, DType::fp64, {2, 3, 100});
  Tensor z = Tensor::empty({9}, DType::fp64);
  ASSERT_TRUE(
      jagged_jagged_bmm_jagged_out(
          {x.view(), s.y.view(), s.len.view(), s.off.view(), s.sq_off.view(), 9, 2}, z.view())
          .ok());
  EXPECT_EQ(values(z), (std::vector<double>{10, 12, 0, 15, 18, 0, 0, 0, 0}));
  // grad = the block [1 2 .; 3 4 .; . . .]: dx = G y, dy = G^T x on the window.
  Tensor dx = Tensor::empty({3, 1}, DType::fp64), dy = Tensor::empty({3, 1}, DType::fp64);
  ASSERT_TRUE(jagged_jagged_bmm_jagged_out_bwd({s.sq.view(), x.view(), s.y.view(), s.len.view(),
                                                s.off.view(), s.sq_off.view(), 9, 2},
                                               dx.view(), dy.view())
                  .ok());
  EXPECT_EQ(values(dx), (std::vector<double>{1 * 5 + 2 * 6, 3 * 5 + 4 * 6, 0}));
  EXPECT_EQ(values(dy), (std::vector<double>{1 * 2 + 3 * 3, 2 * 2 + 4 * 3, 0}));
}

TEST(ArrayJaggedBmmJaggedOut, RefusesRowOffsetsThatDisagreeWithLengths) {
  Tensor y = Tensor::empty({4, 1}, DType::fp64);
  Tensor sq = Tensor::empty({13}, DType::fp64);
  Tensor len = make<int64_t>({2}, DType::int64, {2, 3});
  Tensor off = make<int64_t>({3}, DType::int64, {0, 2, 4});
  Tensor sq_off = make<int64_t>({3}, DType::int64, {0, 4, 13});
  Tensor z = Tensor::empty({4, 1}, DType::fp64);
  const Status st = array_jagged_bmm_jagged_out(
      {sq.view(), y.view(), len.view(), sq_off.view(), off.view(), 3}, z.view());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("array_jagged_bmm_jagged_out: y_offsets[2]-y_offsets[1]=2 but "
                              "seq_lengths[1]=3; sequence b must have seq_lengths[b] rows"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace recops
