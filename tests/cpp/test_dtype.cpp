// Exact dtype conversions: every 16-bit pattern round-trips, rounding is to nearest even.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "recops/dtype.h"

namespace recops {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType t : kAllDTypes) {
    auto back = dtype_from_name(dtype_name(t));
    ASSERT_TRUE(back.has_value()) << dtype_name(t);
    EXPECT_EQ(*back, t);
  }
  EXPECT_FALSE(dtype_from_name("float32").has_value());
}

TEST(DType, HalfAllPatternsRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const double v = to_double(Half{static_cast<uint16_t>(b)});
    if (std::isnan(v)) continue;
    EXPECT_EQ(half_from_double(v).bits, b) << b;
  }
}

TEST(DType, BFloat16AllPatternsRoundTripAndMatchFloatPath) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const double v = to_double(BFloat16{static_cast<uint16_t>(b)});
    if (std::isnan(v)) continue;
    EXPECT_EQ(bf16_from_double(v).bits, b) << b;
    EXPECT_EQ(bf16_from_float(static_cast<float>(v)).bits, b) << b;
    EXPECT_EQ(to_float(BFloat16{static_cast<uint16_t>(b)}), static_cast<float>(v));
  }
}

// The fast half paths of the CPU kernels agree bit for bit with the exact ones: to_float over every
// pattern, half_from_float over every float around the half range's edges and a hash-spread
// sample of all 2^32 patterns.
TEST(DType, HalfFastPathsMatchExact) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const Half h{static_cast<uint16_t>(b)};
    const float f = to_float(h), g = static_cast<float>(to_double(h));
    if (std::isnan(g)) {
      EXPECT_TRUE(std::isnan(f)) << b;
      continue;
    }
    uint32_t fb, gb;
    std::memcpy(&fb, &f, 4);
    std::memcpy(&gb, &g, 4);
    EXPECT_EQ(fb, gb) << b;
  }
  auto same = [](uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return half_from_float(f).bits == half_from_double(f).bits;
  };
  // Every float whose top 19 bits match a half boundary neighbourhood, then a sample.
  for (uint32_t edge : {0x38800000u, 0x477FF000u, 0x477FE000u, 0x33000000u, 0x387FC000u}) {
    for (uint32_t d = 0; d < (1u << 14); ++d) {
      EXPECT_TRUE(same(edge + d - (1u << 13))) << std::hex << edge + d - (1u << 13);
      EXPECT_TRUE(same((edge + d - (1u << 13)) | 0x80000000u));
    }
  }
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < (1 << 22); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    const auto u = static_cast<uint32_t>(x);
    if (!same(u)) {
      ADD_FAILURE() << "half_from_float differs at bits 0x" << std::hex << u;
      break;
    }
  }
}

TEST(DType, Fp8AllPatternsRoundTrip) {
  for (uint32_t b = 0; b < 256; ++b) {
    const double v = to_double(Fp8E4M3{static_cast<uint8_t>(b)});
    if (std::isnan(v)) {
      EXPECT_EQ(b & 0x7Fu, 0x7Fu) << b;
      continue;
    }
    EXPECT_EQ(fp8_e4m3_from_double(v).bits, b) << b;
  }
  EXPECT_EQ(to_double(Fp8E4M3{0x7E}), 448.0);
  EXPECT_EQ(fp8_e4m3_from_double(460.0).bits, 0x7E);                // rounds down to 448
  EXPECT_TRUE(std::isnan(to_double(fp8_e4m3_from_double(470.0))));  // nearest is 480: no such value
}

TEST(DType, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next fp16 (1 + 2^-10): ties to even -> 1.
  EXPECT_EQ(half_from_double(1.0 + std::ldexp(1.0, -11)).bits, 0x3C00);
  EXPECT_EQ(half_from_double(1.0 + 3 * std::ldexp(1.0, -11)).bits, 0x3C02);
  EXPECT_EQ(half_from_double(65520.0).bits, 0x7C00);  // rounds to inf
  EXPECT_EQ(half_from_double(65519.0).bits, 0x7BFF);
  EXPECT_EQ(half_from_double(std::ldexp(1.0, -25)).bits, 0x0000);  // half of min subnormal: even
  EXPECT_EQ(half_from_double(std::ldexp(1.5, -25)).bits, 0x0001);
  EXPECT_EQ(bf16_from_double(1.0 + std::ldexp(1.0, -8)).bits, 0x3F80);
  EXPECT_EQ(bf16_from_double(-0.0).bits, 0x8000);
}

}  // namespace
}  // namespace recops
