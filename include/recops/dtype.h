// recops/dtype.h: the element types recops understands, with exact conversions.
//
// Conversions to double are exact for every type. Conversions from double round to nearest,
// ties to even, as the IEEE formats and torch's casts do; fp8 e4m3 (the "fn" variant: no
// infinities, one NaN pattern per sign, max 448) saturates nothing: values beyond 448 round to NaN,
// like torch.float8_e4m3fn casts.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

#include "recops/isa_ns.h"

namespace recops {

enum class DType : uint8_t { fp64, fp32, fp16, bf16, fp8_e4m3, int32, int64, uint8, boolean };

inline constexpr DType kAllDTypes[] = {DType::fp64,  DType::fp32,     DType::fp16,
                                       DType::bf16,  DType::fp8_e4m3, DType::int32,
                                       DType::int64, DType::uint8,    DType::boolean};

// The functions of this header are in an inline namespace named for the ISA flags of the including
// file (recops/isa_ns.h): *_avx2.cpp / *_avx512.cpp files include it too, and a copy they emit
// out of line must never be the one baseline code links to. The types are outside it.
inline namespace RECOPS_ISA_NS {
// The one spelling of each dtype, shared by the CLI, YAML files, results and error messages.
constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::fp64: return "fp64";
    case DType::fp32: return "fp32";
    case DType::fp16: return "fp16";
    case DType::bf16: return "bf16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::uint8: return "uint8";
    case DType::boolean: return "bool";
  }
  return "?";
}

constexpr int64_t dtype_size(DType t) {
  switch (t) {
    case DType::fp64:
    case DType::int64: return 8;
    case DType::fp32:
    case DType::int32: return 4;
    case DType::fp16:
    case DType::bf16: return 2;
    case DType::fp8_e4m3:
    case DType::uint8:
    case DType::boolean: return 1;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16 ||
         t == DType::fp8_e4m3;
}
constexpr bool is_integral(DType t) {
  return !is_floating(t);
}  // bool counts as integral

inline std::optional<DType> dtype_from_name(std::string_view s) {
  for (DType t : kAllDTypes)
    if (dtype_name(t) == s) return t;
  return std::nullopt;
}

}  // namespace RECOPS_ISA_NS

// ---- 16- and 8-bit storage types (bit containers; math happens in float/double) ----
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};
struct Fp8E4M3 {
  uint8_t bits;
};

inline namespace RECOPS_ISA_NS {
namespace dtype_detail {
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// 2^k exactly, for -1022 <= k <= 1023 (a normal double), from its bits: the power-of-two
// scalings below multiply by it instead of calling std::ldexp (a libm call per element that made
// half of an fp64 golden's time on bf16 inputs). Every use keeps k in that range.
inline double pow2(int k) {
  const uint64_t u = static_cast<uint64_t>(k + 1023) << 52;
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

// Round a double to a binary format with `mant` explicit mantissa bits, exponent bias `bias`,
// max finite `max_finite`; returns the bit pattern (sign|exp|mant). Handles subnormals exactly,
// round-to-nearest-even. inf_ok=false: out-of-range and inf become NaN (e4m3fn convention).
inline uint32_t round_to_format(double x, int exp_bits, int mant, bool inf_ok, double max_finite,
                                uint32_t nan_bits) {
  const uint32_t sign = std::signbit(x) ? 1u : 0u;
  const int total = 1 + exp_bits + mant;
  const uint32_t sign_bit = sign << (total - 1);
  const int bias = (1 << (exp_bits - 1)) - 1;
  if (std::isnan(x)) return sign_bit | nan_bits;
  double a = std::fabs(x);
  const uint32_t inf_bits = ((1u << exp_bits) - 1u) << mant;
  if (std::isinf(a)) return inf_ok ? (sign_bit | inf_bits) : (sign_bit | nan_bits);
  if (a == 0.0) return sign_bit;
  const int min_exp = 1 - bias;  // exponent of the smallest normal
  int e;
  std::frexp(a, &e);                 // a = f * 2^e, f in [0.5, 1)
  int exp = e - 1;                   // a = 1.m * 2^exp
  if (exp < min_exp) exp = min_exp;  // subnormal range: fixed quantum
  // exp - mant >= min_exp - mant >= -149
  const double quantum = pow2(exp - mant);
  double q = a / quantum;        // exact: power-of-two scaling
  double r = std::nearbyint(q);  // default rounding mode: nearest even
  double v = r * quantum;
  if (v > max_finite) {
    // Beyond the largest finite value: IEEE rounds to inf when at or past max + half ulp.
    const double half_ulp_above =
        max_finite +
        std::ldexp(1.0, static_cast<int>(std::floor(std::log2(max_finite))) - mant - 1);
    if (!inf_ok) return sign_bit | nan_bits;
    if (a >= half_ulp_above) return sign_bit | inf_bits;
    v = max_finite;
  }
  if (v == 0.0) return sign_bit;  // underflow to (signed) zero
  // Encode v exactly.
  int ve;
  std::frexp(v, &ve);
  int vexp = ve - 1;
  uint32_t biased, m;
  if (vexp < min_exp) {
    biased = 0;
    m = static_cast<uint32_t>(v * pow2(mant - min_exp));
  } else {
    biased = static_cast<uint32_t>(vexp + bias);
    m = static_cast<uint32_t>(v * pow2(mant - vexp)) - (1u << mant);
  }
  return sign_bit | (biased << mant) | m;
}

inline double decode_format(uint32_t bits, int exp_bits, int mant, bool has_inf,
                            uint32_t nan_mask_all) {
  const int total = 1 + exp_bits + mant;
  const bool neg = (bits >> (total - 1)) & 1u;
  const uint32_t e = (bits >> mant) & ((1u << exp_bits) - 1u);
  const uint32_t m = bits & ((1u << mant) - 1u);
  const int bias = (1 << (exp_bits - 1)) - 1;
  double v;
  if (has_inf && e == (1u << exp_bits) - 1u) {
    v = m ? NAN : INFINITY;
  } else if (!has_inf && (bits & nan_mask_all) == nan_mask_all) {
    v = NAN;
  } else if (e == 0) {
    v = static_cast<double>(m) * pow2(1 - bias - mant);
  } else {
    v = static_cast<double>(m + (1u << mant)) * pow2(static_cast<int>(e) - bias - mant);
  }
  return neg ? -v : v;
}
}  // namespace dtype_detail

inline double to_double(Half h) {
  return dtype_detail::decode_format(h.bits, 5, 10, true, 0);
}
inline double to_double(BFloat16 h) {
  return dtype_detail::decode_format(h.bits, 8, 7, true, 0);
}
inline double to_double(Fp8E4M3 h) {
  return dtype_detail::decode_format(h.bits, 4, 3, false, 0x7Fu);
}
inline Half half_from_double(double x) {
  return Half{
      static_cast<uint16_t>(dtype_detail::round_to_format(x, 5, 10, true, 65504.0, 0x7E00u))};
}
inline BFloat16 bf16_from_double(double x) {
  return BFloat16{static_cast<uint16_t>(
      dtype_detail::round_to_format(x, 8, 7, true, 3.3895313892515355e38, 0x7FC0u))};
}
inline Fp8E4M3 fp8_e4m3_from_double(double x) {
  return Fp8E4M3{static_cast<uint8_t>(dtype_detail::round_to_format(x, 4, 3, false, 448.0, 0x7Fu))};
}

// Fast float paths used by CPU kernels (bit tricks, same rounding as the exact versions).
inline float to_float(BFloat16 h) {
  return dtype_detail::bits_f32(static_cast<uint32_t>(h.bits) << 16);
}
inline BFloat16 bf16_from_float(float f) {
  uint32_t u = dtype_detail::f32_bits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  u += 0x7FFFu + ((u >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>(u >> 16)};
}
// Exact: every half is a float. The exponent is rebiased in the integer domain (no floating
// multiply, so flush-to-zero modes cannot touch subnormal halves).
inline float to_float(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t em = h.bits & 0x7FFFu;
  if (em >= 0x7C00u) return dtype_detail::bits_f32(sign | 0x7F800000u | ((em & 0x3FFu) << 13));
  if (em >= 0x0400u) return dtype_detail::bits_f32(sign | ((em + (112u << 10)) << 13));
  const float v = static_cast<float>(em) * 0x1p-24f;  // subnormal or zero
  return sign ? -v : v;
}
// Single rounding to nearest even, the same bits as half_from_double(f): normal halves by bit
// arithmetic, the rest (zero, subnormal, overflow, inf, NaN) by the exact path.
inline Half half_from_float(float f) {
  const uint32_t u = dtype_detail::f32_bits(f);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x38800000u && a < 0x477FF000u) {  // [2^-14, 65520)
    const uint32_t r = a + 0xFFFu + ((a >> 13) & 1u) - (112u << 23);
    return Half{static_cast<uint16_t>(((u >> 16) & 0x8000u) | (r >> 13))};
  }
  return half_from_double(f);
}

// Templated code over the floating dtypes (fp64, fp32, fp16, bf16): exact widening to double and
// float (fp64 narrows to float by rounding), single rounding back.
inline double to_double(double v) {
  return v;
}
inline double to_double(float v) {
  return v;
}
inline float to_float(float v) {
  return v;
}
inline float to_float(double v) {
  return static_cast<float>(v);
}
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, Half>)
    return half_from_double(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_from_double(v);
  else
    return static_cast<T>(v);
}
template <class T>
T from_float(float v) {
  if constexpr (std::is_same_v<T, Half>)
    return half_from_float(v);
  else if constexpr (std::is_same_v<T, BFloat16>)
    return bf16_from_float(v);
  else
    return static_cast<T>(v);
}

// Calls f(T{}) with T the C++ type of a floating dtype (double, float, Half, BFloat16) and
// returns true; false for any other dtype.
template <class F>
bool visit_floating(DType t, F&& f) {
  switch (t) {
    case DType::fp64: f(double{}); return true;
    case DType::fp32: f(float{}); return true;
    case DType::fp16: f(Half{}); return true;
    case DType::bf16: f(BFloat16{}); return true;
    default: return false;
  }
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops
