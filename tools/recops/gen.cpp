// tools/recops/gen.cpp: deterministic inputs for cases (docs/cases.md).
#include "tools/recops/gen.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <optional>
#include <vector>

#include "core/hash_rng.h"
#include "core/parallel.h"

namespace recops::cli {

uint64_t tensor_seed(uint64_t case_seed, uint64_t k) {
  return core::hash64(case_seed, 0x1000 + k);
}

std::vector<int64_t> make_lengths(const LengthsSpec& spec, uint64_t case_seed) {
  if (spec.gen.empty()) return spec.explicit_lengths;
  const uint64_t s = tensor_seed(case_seed, 0);
  std::vector<int64_t> L(static_cast<size_t>(spec.B), 0);
  for (int64_t b = 0; b < spec.B; ++b) {
    const auto ub = static_cast<uint64_t>(b);
    int64_t v = 0;
    if (spec.gen == "uniform") {
      v = spec.max > 0 ? core::uniform_int(s, ub, 0, spec.max - 1) : 0;
    } else if (spec.gen == "skewed") {
      if (spec.max > 0) {
        // Box-Muller from two uniforms; 1 - u keeps the log argument in (0, 1].
        const double u1 = core::uniform01(s, 2 * ub), u2 = core::uniform01(s, 2 * ub + 1);
        const double z =
            std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(2.0 * std::numbers::pi * u2);
        const double x = std::round(std::exp(std::log(static_cast<double>(spec.max) / 4.0) + z));
        v = static_cast<int64_t>(std::min(2.0 * static_cast<double>(spec.max), x));
      }
    } else if (spec.gen == "empty") {
      v = 0;
    } else if (spec.gen == "all_max") {
      v = spec.max;
    } else if (spec.gen == "range") {
      v = core::uniform_int(s, ub, spec.lo, spec.hi);
    }
    L[static_cast<size_t>(b)] = v;
  }
  return L;
}

std::vector<int64_t> offsets_from_lengths(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> o(lengths.size() + 1, 0);
  // Saturated at the int64 limits: a case file's lengths may be anything, and the sizes they give
  // are then refused when allocated instead of wrapping.
  for (size_t i = 0; i < lengths.size(); ++i)
    if (__builtin_add_overflow(o[i], lengths[i], &o[i + 1]))
      o[i + 1] = lengths[i] > 0 ? INT64_MAX : INT64_MIN;
  return o;
}

double generated_value(DType dtype, const FillSpec& f, uint64_t i) {
  switch (dtype) {
    case DType::fp64:
    case DType::fp32:
    case DType::fp16:
    case DType::bf16: return (core::uniform01(f.seed, i) * 2.0 - 1.0) * f.scale;
    case DType::fp8_e4m3: return (core::uniform01(f.seed, i) * 2.0 - 1.0) * 8.0;
    case DType::int32:
    case DType::int64:
      return static_cast<double>(f.range
                                     ? core::uniform_int(f.seed, i, f.range->first, f.range->second)
                                     : core::uniform_int(f.seed, i, -1000, 1000));
    case DType::uint8: return static_cast<double>(core::uniform_int(f.seed, i, 0, 255));
    case DType::boolean: return static_cast<double>(core::hash64(f.seed, i) & 1u);
  }
  return 0.0;
}

namespace {

// A value of type T at p (any alignment), and back.
template <class T>
T load_as(const void* p) {
  T x;
  std::memcpy(&x, p, sizeof(T));
  return x;
}
template <class T>
void store_as(void* p, T x) {
  std::memcpy(p, &x, sizeof(T));
}

// Double to a 16-bit float format with `kMant` mantissa bits and exponent bias `kBias`, rounded
// once to nearest even, for the results that are normal numbers of the format: the double's bits
// are rounded in place (a carry out of the mantissa moves into the exponent, as rounding up to the
// next binade or to infinity should). Nothing for everything else (NaN, infinities, zero,
// subnormal results, inputs below the format's smallest normal), which recops/dtype.h's exact
// routine takes; these are its bits (selftest.cpp compares the two). The golden and input paths
// of `recops check` convert every element here; the generic routine's frexp and nearbyint made
// about a quarter of a large bf16 case's time.
template <int kMant, int kBias>
std::optional<uint16_t> round16_normal(double x) {
  uint64_t u;
  std::memcpy(&u, &x, 8);
  const uint64_t mag = u & ~(uint64_t{1} << 63);
  const int e = static_cast<int>(mag >> 52) - 1023;     // x = 1.m * 2^e (finite, normal doubles)
  if (e < 1 - kBias || e > kBias) return std::nullopt;  // not a normal of the format, or not finite
  constexpr int kDrop = 52 - kMant;
  const uint64_t r = mag + ((uint64_t{1} << (kDrop - 1)) - 1) + ((mag >> kDrop) & 1);
  const int re = static_cast<int>(r >> 52) - 1023;  // e, or e + 1 after a carry
  const uint32_t sign = static_cast<uint32_t>(u >> 63) << 15;
  if (re > kBias) return static_cast<uint16_t>(sign | (0x7FFFu >> kMant << kMant));  // infinity
  const auto mbits = static_cast<uint32_t>((r >> kDrop) & ((uint64_t{1} << kMant) - 1));
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(re + kBias) << kMant) | mbits);
}

// fp16 and fp8 to double by table (exact: filled from recops/dtype.h's decoders once).
template <class F, uint32_t kCount>
const double* decode_table() {
  static const std::vector<double> t = [] {
    std::vector<double> v(kCount);
    for (uint32_t b = 0; b < kCount; ++b) v[b] = to_double(F{static_cast<decltype(F::bits)>(b)});
    return v;
  }();
  return t.data();
}

}  // namespace

uint16_t bf16_bits_from_double(double x) {
  if (const auto b = round16_normal<7, 127>(x)) return *b;
  return bf16_from_double(x).bits;
}
uint16_t half_bits_from_double(double x) {
  if (const auto b = round16_normal<10, 15>(x)) return *b;
  return half_from_double(x).bits;
}

void store_int(void* p, DType t, int64_t v) {
  switch (t) {
    case DType::int64: store_as(p, v); return;
    case DType::int32: store_as(p, static_cast<int32_t>(v)); return;
    case DType::uint8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v); return;
    case DType::boolean: *static_cast<uint8_t*>(p) = v != 0; return;
    default: store_value(p, t, static_cast<double>(v)); return;
  }
}

void store_value(void* p, DType t, double v) {
  switch (t) {
    case DType::fp64: store_as(p, v); return;
    case DType::fp32: store_as(p, static_cast<float>(v)); return;
    case DType::fp16: store_as(p, half_bits_from_double(v)); return;
    case DType::bf16: store_as(p, bf16_bits_from_double(v)); return;
    case DType::fp8_e4m3: *static_cast<uint8_t*>(p) = fp8_e4m3_from_double(v).bits; return;
    default: store_int(p, t, static_cast<int64_t>(v)); return;
  }
}

double load_value(const void* p, DType t) {
  switch (t) {
    case DType::fp64: return load_as<double>(p);
    case DType::fp32: return load_as<float>(p);
    case DType::fp16: return decode_table<Half, 65536>()[load_as<uint16_t>(p)];
    case DType::bf16: return to_float(BFloat16{load_as<uint16_t>(p)});  // exact: a shift
    case DType::fp8_e4m3: return decode_table<Fp8E4M3, 256>()[*static_cast<const uint8_t*>(p)];
    case DType::int32: return load_as<int32_t>(p);
    case DType::int64: return static_cast<double>(load_as<int64_t>(p));
    case DType::uint8: return *static_cast<const uint8_t*>(p);
    case DType::boolean: return *static_cast<const uint8_t*>(p) != 0;
  }
  return 0.0;
}

void fill_view(const TensorView& v, const FillSpec& f) {
  auto* base = static_cast<char*>(v.data);
  const int64_t es = dtype_size(v.dtype);
  const bool integral = is_integral(v.dtype);
  auto one = [&](int64_t i, int64_t off) {
    void* p = base + off * es;
    const auto ui = static_cast<uint64_t>(i);
    if ((v.dtype == DType::int32 || v.dtype == DType::int64) && f.range)
      store_int(p, v.dtype,
                core::uniform_int(f.seed, ui, f.range->first, f.range->second));  // exact
    else if (integral)
      store_int(p, v.dtype, static_cast<int64_t>(generated_value(v.dtype, f, ui)));
    else
      store_value(p, v.dtype, generated_value(v.dtype, f, ui));
  };
  // Each element depends only on (seed, i): chunks fill in parallel with the same result.
  core::parallel_for(v.numel(), int64_t{1} << 16, 0,
                     [&](int64_t lo, int64_t hi) { for_each_element_in(v, lo, hi, one); });
}

}  // namespace recops::cli
