// jagged/jagged_index_select/test_jagged_index_select.cpp: torch-free checks beyond `recops check`:
// the CPU backward's fast bf16 rounding (common/select_cpu.h) gives the library's exact bits, and
// a refusal message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ops/jagged/common/select_cpu.h"
#include "ops/jagged/jagged_index_select/jagged_index_select.h"
#include "recops/tensor.h"

namespace recops {
namespace {

TEST(JaggedIndexSelect, FastBf16RoundingMatchesExact) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  const auto check = [](double v) {
    EXPECT_EQ(ops::cpu_bf16_from_double(v).bits, bf16_from_double(v).bits) << v;
  };
  for (int i = 0; i < 200000; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t bits = s;
    double v;
    std::memcpy(&v, &bits, sizeof v);
    check(v);  // any bit pattern (any exponent, NaN, inf)
    check(std::ldexp(static_cast<double>(s >> 11), -53 + static_cast<int>(s % 40) - 20));
  }
  // Ties at the rounding bit, both parities, and the edges of the normal range.
  for (double v :
       {1.0 + 0x1p-8, 1.0 + 0x1p-7 + 0x1p-8, -(1.0 + 0x1p-8), 0x1p-126, 0x1.ffp-127,
        3.3895313892515355e38, 3.4e38, 0.0, -0.0, std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN(), 5e-324})
    check(v);
}

// The two-member backward sums 16-bit gradients in fp32 (select_pair_sum): the bits of the fp64
// sum rounded once, as the golden computes it, for every pair tried: random bit patterns (any
// exponent gap, NaN, inf, subnormals), pairs of close exponents with random signs (cancellation),
// and each value with itself and its negation.
TEST(JaggedIndexSelect, PairSumInFp32MatchesFp64) {
  uint64_t s = 0x243F6A8885A308D3ull;
  const auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint16_t>(s >> 48);
  };
  const auto check = [](auto a, auto b, auto from_double) {
    const double exact = (0.0 + to_double(a)) + to_double(b);
    const auto want = from_double(exact), got = ops::select_pair_sum(a, b);
    if (std::isnan(exact))
      EXPECT_TRUE(std::isnan(to_double(got))) << to_double(a) << " + " << to_double(b);
    else
      EXPECT_EQ(got.bits, want.bits) << to_double(a) << " + " << to_double(b);
  };
  const auto bf = [](double v) { return bf16_from_double(v); };
  const auto hf = [](double v) { return half_from_double(v); };
  for (int i = 0; i < 400000; ++i) {
    const uint16_t x = next(), y = next();
    // Close exponents: y's exponent field within 20 of x's.
    const uint16_t yb =
        static_cast<uint16_t>((y & 0x807Fu) | ((((x >> 7) & 0xFFu) + (y % 41) - 20) & 0xFFu) << 7);
    const uint16_t yh = static_cast<uint16_t>(
        (y & 0x83FFu) | ((((x >> 10) & 0x1Fu) + (y % 27) - 13) & 0x1Fu) << 10);
    check(BFloat16{x}, BFloat16{y}, bf);
    check(BFloat16{x}, BFloat16{yb}, bf);
    check(BFloat16{x}, BFloat16{static_cast<uint16_t>(x ^ 0x8000u)}, bf);
    check(BFloat16{x}, BFloat16{x}, bf);
    check(Half{x}, Half{y}, hf);
    check(Half{x}, Half{yh}, hf);
    check(Half{x}, Half{static_cast<uint16_t>(x ^ 0x8000u)}, hf);
    check(Half{x}, Half{x}, hf);
    if (HasFailure()) break;
  }
}

TEST(JaggedIndexSelect, RefusesIndexOutOfRange) {
  Tensor values = Tensor::empty({5, 2}, DType::fp32);
  Tensor lengths = Tensor::empty({2}, DType::int64);
  Tensor indices = Tensor::empty({1}, DType::int64);
  static_cast<int64_t*>(lengths.data())[0] = 2;
  static_cast<int64_t*>(lengths.data())[1] = 3;
  static_cast<int64_t*>(indices.data())[0] = 2;
  Tensor out = Tensor::empty({0, 2}, DType::fp32);
  Tensor out_lengths = Tensor::empty({1}, DType::int64);
  const Status st = jagged_index_select({values.view(), lengths.view(), indices.view(), 0},
                                        out.view(), out_lengths.view());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("jagged_index_select: indices[0]=2 is out of range"),
            std::string::npos)
      << st.message();
}

// Issue 21: B = 0 lengths without storage (what torch hands over for an empty tensor) and no
// num_dense_output_rows: the size is 0, known without reading; with K > 0 the error names the
// index, not a missing row count.
TEST(JaggedIndexSelect, EmptyLengthsWithoutDataGiveZeroRows) {
  const TensorView values(nullptr, DType::fp32, Device::cpu(), {0, 3});
  const TensorView lengths(nullptr, DType::int64, Device::cpu(), {0});
  const TensorView no_indices(nullptr, DType::int64, Device::cpu(), {0});
  Shape out_shape, len_shape;
  ASSERT_TRUE(
      jagged_index_select_shape({values, lengths, no_indices, std::nullopt}, &out_shape, &len_shape)
          .ok());
  EXPECT_EQ(out_shape, (Shape{0, 3}));
  EXPECT_EQ(len_shape, (Shape{0}));
  Tensor indices = Tensor::empty({1}, DType::int64);
  static_cast<int64_t*>(indices.data())[0] = 0;
  const Status st = jagged_index_select_shape({values, lengths, indices.view(), std::nullopt},
                                              &out_shape, &len_shape);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("indices[0]=0 is out of range"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace recops
