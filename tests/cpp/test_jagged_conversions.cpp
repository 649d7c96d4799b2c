// jagged_to_padded_dense and dense_to_jagged: every CPU implementation against the reference on
// seeded shapes, the spec's edge cases, round trips, and every bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "test_util.h"

namespace recops {
namespace {
using testing::fill_random_bits;
using testing::offsets_from_lengths;
using testing::poison;
using testing::with_impl;

struct ConvCase {
  std::vector<int64_t> lengths;
  Shape E;
  int64_t max_L;
  DType dtype;
  DType off_dtype;
};

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cs;
  const DType dts[] = {DType::fp32,     DType::bf16, DType::fp16,  DType::int64, DType::boolean,
                       DType::fp8_e4m3, DType::fp64, DType::uint8, DType::int32};
  int k = 0;
  for (DType dt : dts) {
    for (DType od : {DType::int32, DType::int64}) {
      ++k;
      cs.push_back({testing::random_lengths(37, 70, static_cast<uint64_t>(k)), {3}, 64, dt, od});
      cs.push_back({{0, 0, 0}, {5}, 4, dt, od});                     // all empty
      cs.push_back({{}, {2}, 7, dt, od});                            // B = 0
      cs.push_back({{1, 0, 17, 33, 65, 128, 129}, {}, 32, dt, od});  // 1-D values, tile edges
      cs.push_back({{4, 9}, {2, 3}, 0, dt, od});                     // max_L = 0, 2-D E
      cs.push_back({{5, 1, 0, 6}, {199}, 1, dt, od});                // max_L = 1, odd D
      cs.push_back({{3, 0, 2}, {0}, 5, dt, od});                     // D = 0
    }
  }
  return cs;
}

Shape values_shape(const ConvCase& c, int64_t total) {
  Shape s = {total};
  s.insert(s.end(), c.E.begin(), c.E.end());
  return s;
}

TEST(JaggedToPaddedDense, CpuMatchesReference) {
  uint64_t seed = 100;
  for (const ConvCase& c : conv_cases()) {
    int64_t total = 0;
    for (int64_t l : c.lengths) total += l;
    Tensor values = Tensor::empty(values_shape(c, total), c.dtype);
    fill_random_bits(values, ++seed);
    Tensor off = offsets_from_lengths(c.lengths, c.off_dtype);
    Shape out_shape;
    ASSERT_TRUE(jagged_to_padded_dense_shape(values, off, c.max_L, &out_shape).ok());
    Tensor gold = Tensor::empty(out_shape, c.dtype), got = Tensor::empty(out_shape, c.dtype);
    poison(gold, 0x5A);
    poison(got, 0xA5);
    const double pad = c.dtype == DType::boolean ? 1.0 : 3.0;
    ASSERT_TRUE(
        jagged_to_padded_dense(values, off, c.max_L, pad, gold, with_impl("reference")).ok());
    std::string used;
    Status st =
        jagged_to_padded_dense(values, off, c.max_L, pad, got, with_impl("cpu_generic", &used));
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(testing::bytes_equal(gold, got))
        << dtype_name(c.dtype) << " B=" << c.lengths.size();
  }
}

TEST(DenseToJagged, CpuMatchesReferenceAndRoundTrips) {
  uint64_t seed = 200;
  for (const ConvCase& c : conv_cases()) {
    int64_t total = 0;
    for (int64_t l : c.lengths) total += l;
    Tensor off = offsets_from_lengths(c.lengths, c.off_dtype);
    Shape dshape = {static_cast<int64_t>(c.lengths.size()), c.max_L};  // S = max_L: some L_b > S
    dshape.insert(dshape.end(), c.E.begin(), c.E.end());
    Tensor dense = Tensor::empty(dshape, c.dtype);
    fill_random_bits(dense, ++seed);
    Shape out_shape;
    ASSERT_TRUE(dense_to_jagged_shape(dense, off, total, &out_shape).ok());
    Tensor gold = Tensor::empty(out_shape, c.dtype), got = Tensor::empty(out_shape, c.dtype);
    poison(gold, 0x5A);
    poison(got, 0xA5);
    ASSERT_TRUE(dense_to_jagged(dense, off, gold, with_impl("reference")).ok());
    Status st = dense_to_jagged(dense, off, got, with_impl("cpu_generic"));
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_TRUE(testing::bytes_equal(gold, got)) << dtype_name(c.dtype);
    // Round trip: to_dense(to_jagged(dense)) keeps dense[b, l] for l < L_b and pads the rest.
    Tensor back = Tensor::empty(dshape, c.dtype);
    ASSERT_TRUE(jagged_to_padded_dense(got, off, c.max_L, 0.0, back).ok());
    const int64_t row =
        dense.numel() / std::max<int64_t>(1, dshape[0] * dshape[1]) * dtype_size(c.dtype);
    for (size_t b = 0; b < c.lengths.size(); ++b)
      for (int64_t l = 0; l < std::min(c.lengths[b], c.max_L); ++l) {
        const int64_t o = (static_cast<int64_t>(b) * c.max_L + l) * row;
        ASSERT_EQ(std::memcmp(static_cast<char*>(dense.data()) + o,
                              static_cast<char*>(back.data()) + o, static_cast<size_t>(row)),
                  0);
      }
  }
}

TEST(JaggedToPaddedDense, StridedValuesAndPaddingValues) {
  // values rows 7 elements apart, 3 used: a row-strided slice.
  std::vector<int64_t> lengths = {2, 0, 5};
  Tensor base = Tensor::empty({7, 7}, DType::fp32);
  for (int i = 0; i < 49; ++i) base.view().ptr<float>()[i] = static_cast<float>(i);
  TensorView values(base.data(), DType::fp32, Device::cpu(), {7, 3}, {7, 1});
  Tensor off = offsets_from_lengths(lengths, DType::int64);
  for (double pad : {0.0, -static_cast<double>(INFINITY), static_cast<double>(NAN)}) {
    Tensor a = Tensor::empty({3, 4, 3}, DType::fp32), b = Tensor::empty({3, 4, 3}, DType::fp32);
    ASSERT_TRUE(jagged_to_padded_dense(values, off, 4, pad, a, with_impl("reference")).ok());
    ASSERT_TRUE(jagged_to_padded_dense(values, off, 4, pad, b, with_impl("cpu_generic")).ok());
    EXPECT_TRUE(testing::bytes_equal(a, b));
    const float* o = b.view().ptr<float>();
    EXPECT_EQ(o[(2 * 4 + 3) * 3 + 2], static_cast<float>((2 + 3) * 7 + 2));  // row (b=2, l=3)
    const float p = o[(1 * 4 + 0) * 3];
    if (std::isnan(pad))
      EXPECT_TRUE(std::isnan(p));
    else
      EXPECT_EQ(p, static_cast<float>(pad));
  }
}

void expect_error(const Status& st, const std::string& text) {
  ASSERT_FALSE(st.ok()) << "expected an error containing: " << text;
  EXPECT_NE(st.message().find(text), std::string::npos) << st.message();
}

TEST(JaggedToPaddedDense, BadInputsNameArgumentAndRule) {
  Tensor values = Tensor::empty({6, 2}, DType::fp32);
  Tensor out = Tensor::empty({2, 4, 2}, DType::fp32);
  auto off_of = [](std::vector<int64_t> v) {
    Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::int64);
    for (size_t i = 0; i < v.size(); ++i) t.view().ptr<int64_t>()[i] = v[i];
    return t;
  };
  expect_error(jagged_to_padded_dense(values, off_of({1, 3, 6}), 4, 0, out),
               "seq_offsets[0]=1; offsets must start at 0");
  expect_error(jagged_to_padded_dense(values, off_of({0, 4, 3}), 4, 0, out),
               "seq_offsets[2]=3 < seq_offsets[1]=4; offsets must be non-decreasing");
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 5}), 4, 0, out),
               "seq_offsets[2]=5 but values.size(0) (total_L) is 6");
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 6}), -1, 0, out),
               "max_seq_len=-1 must be >= 0");
  Tensor off2d = Tensor::empty({1, 3}, DType::int64);
  expect_error(jagged_to_padded_dense(values, off2d, 4, 0, out), "seq_offsets must be 1-D");
  Tensor offf = Tensor::empty({3}, DType::fp32);
  expect_error(jagged_to_padded_dense(values, offf, 4, 0, out),
               "seq_offsets must be int32 or int64");
  Tensor off0 = Tensor::empty({0}, DType::int64);
  expect_error(jagged_to_padded_dense(values, off0, 4, 0, out), "at least one element");
  Tensor ivals = Tensor::empty({6, 2}, DType::int32), iout = Tensor::empty({2, 4, 2}, DType::int32);
  expect_error(jagged_to_padded_dense(ivals, off_of({0, 3, 6}), 4, 0.5, iout),
               "padding_value=0.5 is not an integer");
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 6}), 3, 0, out),
               "out has shape [2, 4, 2], expected [B, max_seq_len, *E] = [2, 3, 2]");
  Tensor bout = Tensor::empty({2, 4, 2}, DType::bf16);
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 6}), 4, 0, bout),
               "out dtype bf16 differs");
  TensorView on_cuda = out.view();
  on_cuda.device = Device::cuda(0);
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 6}), 4, 0, on_cuda),
               "all tensors must be on one device");
  expect_error(jagged_to_padded_dense(values, off_of({0, 3, 6}), 4, 0, out, with_impl("cuda_sm90")),
               "not an implementation of this op");
}

TEST(DenseToJagged, BadInputsNameArgumentAndRule) {
  Tensor dense = Tensor::empty({2, 4, 3}, DType::bf16);
  Tensor off = offsets_from_lengths({3, 5}, DType::int32);
  Tensor out = Tensor::empty({8, 3}, DType::bf16);
  expect_error(dense_to_jagged(dense, off, Tensor::empty({7, 3}, DType::bf16)),
               "seq_offsets[2]=8 but total_L (out.size(0)) is 7");
  expect_error(dense_to_jagged(dense, offsets_from_lengths({3, 5, 1}, DType::int32), out),
               "dense's batch must be B");
  Tensor d1 = Tensor::empty({2}, DType::bf16);
  expect_error(dense_to_jagged(d1, off, out), "dense must have at least 2 dims");
  int64_t total = -1;
  ASSERT_TRUE(dense_to_jagged_total_L(off, &total).ok());
  EXPECT_EQ(total, 8);
  Tensor neg = offsets_from_lengths({3, -5}, DType::int64);
  expect_error(dense_to_jagged_total_L(neg, &total), "is negative");
  // S = 0 with total_L > 0: every row is 0.
  Tensor d0 = Tensor::empty({2, 0, 3}, DType::fp32);
  Tensor o0 = Tensor::empty({8, 3}, DType::fp32);
  poison(o0);
  ASSERT_TRUE(dense_to_jagged(d0, off, o0).ok());
  for (int i = 0; i < 24; ++i) EXPECT_EQ(o0.view().ptr<float>()[i], 0.0f);
}

}  // namespace
}  // namespace recops
