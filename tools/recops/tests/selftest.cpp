// tools/recops/tests/selftest.cpp: the judge and the case-file parser on hand-made inputs, so a
// bug in the checker cannot hide a bug in an op.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "core/hash_rng.h"
#include "tools/recops/casefile.h"
#include "tools/recops/gen.h"
#include "tools/recops/judge.h"
#include "tools/recops/safetensors.h"

using namespace recops;
using namespace recops::cli;

namespace {
int failures = 0;
void expect(bool cond, const char* what) {
  if (!cond) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

TensorView view_of(std::vector<float>& v) {
  return TensorView(v.data(), DType::fp32, Device::cpu(), {static_cast<int64_t>(v.size())});
}

float poison_f32() {
  const auto b = static_cast<uint32_t>(poison_bits(DType::fp32));
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

void test_exact() {
  std::vector<float> gold = {1.f, -2.f, NAN, 0.f, INFINITY};
  std::vector<float> out = gold;
  JudgeOptions jo;
  expect(judge(view_of(out), view_of(gold), jo).pass, "exact: identical passes");
  out[3] = -0.f;
  expect(judge(view_of(out), view_of(gold), jo).pass, "exact: -0 equals +0");
  out[0] = std::nextafter(1.f, 2.f);
  Judgement j = judge(view_of(out), view_of(gold), jo);
  expect(!j.pass && j.mismatched == 1, "exact: one ulp off fails");
  out = gold;
  out[1] = poison_f32();
  j = judge(view_of(out), view_of(gold), jo);
  expect(!j.pass && j.unwritten == 1, "exact: a poisoned element is unwritten");
  out = gold;
  out[0] = NAN;
  j = judge(view_of(out), view_of(gold), jo);
  expect(!j.pass && j.nonfinite == 1, "exact: NaN where gold is finite fails");
  // Gold equal to the poison: ambiguous, not a failure of this run.
  gold[1] = poison_f32();
  out = gold;
  j = judge(view_of(out), view_of(gold), jo);
  expect(j.pass && j.ambiguous == 1, "exact: gold == poison is ambiguous");
}

void test_single() {
  std::vector<float> gold(100), out(100);
  for (int i = 0; i < 100; ++i) gold[i] = out[i] = 1.f + 0.01f * static_cast<float>(i);
  JudgeOptions jo;
  jo.standard = core::Standard::single;
  expect(judge(view_of(out), view_of(gold), jo).pass, "single: identical passes");
  out[5] *= 1.f + 2e-3f;  // rel 2e-3 > 10 T (T = 2^-13, 10 T = 1.2e-3)
  expect(!judge(view_of(out), view_of(gold), jo).pass, "single: max rel above 10 T fails");
  out = gold;
  for (auto& x : out) x *= 1.f + 2e-4f;  // mean rel 2e-4 > T, max < 10 T
  expect(!judge(view_of(out), view_of(gold), jo).pass, "single: mean rel above T fails");
  out = gold;
  for (auto& x : out) x *= 1.f + 5e-5f;
  expect(judge(view_of(out), view_of(gold), jo).pass, "single: mean rel below T passes");
  out = gold;
  out[7] = INFINITY;
  expect(!judge(view_of(out), view_of(gold), jo).pass, "single: Inf where gold is finite fails");
}

void test_double() {
  std::vector<float> gold(64), base(64), out(64);
  for (int i = 0; i < 64; ++i) gold[i] = std::sin(static_cast<float>(i));
  for (int i = 0; i < 64; ++i) base[i] = gold[i] + 1e-3f;
  JudgeOptions jo;
  jo.standard = core::Standard::dbl;
  TensorView bv = view_of(base);
  jo.baseline = &bv;
  for (int i = 0; i < 64; ++i) out[i] = gold[i] + 1.5e-3f;
  expect(judge(view_of(out), view_of(gold), jo).pass, "double: within 2x the baseline passes");
  for (int i = 0; i < 64; ++i) out[i] = gold[i] + 3e-3f;
  expect(!judge(view_of(out), view_of(gold), jo).pass, "double: 3x the baseline fails");
  jo.baseline = nullptr;
  expect(!judge(view_of(out), view_of(gold), jo).pass, "double: no baseline fails");
}

// The double standard against a golden rounded to fp16: one output ulp from it is rounding (an
// exact value next to a midpoint), two ulps or a one-ulp error everywhere are not.
void test_double_rounded_golden() {
  const int n = 256;
  std::vector<Half> gold(n), base(n), out(n);
  for (int i = 0; i < n; ++i) gold[i] = half_from_double(0.3 + 0.15 * std::sin(0.7 * i));
  base = gold;
  base[9] = half_from_double(to_double(gold[9]) + 0x1p-17);  // the baseline's only flip: tiny
  auto hv = [](std::vector<Half>& v) {
    return TensorView(v.data(), DType::fp16, Device::cpu(), {static_cast<int64_t>(v.size())});
  };
  TensorView bv = hv(base);
  JudgeOptions jo;
  jo.standard = core::Standard::dbl;
  jo.baseline = &bv;
  expect(core::output_ulp(DType::fp16, 0.3) == 0x1p-12 &&
             core::output_ulp(DType::fp16, 1.0) == 0x1p-10 &&
             core::output_ulp(DType::fp16, 0.0) == 0x1p-24 &&
             core::output_ulp(DType::bf16, -3.0) == 0x1p-6,
         "output_ulp: the spacing at |x|");
  auto step = [](Half h, int k) {  // k ulps up (positive values)
    return Half{static_cast<uint16_t>(h.bits + k)};
  };
  out = gold;
  int big = 0;  // an element in [0.25, 0.5), where one fp16 ulp (2^-12) exceeds T/8 (2^-13)
  while (to_double(gold[big]) < 0.25 || to_double(gold[big]) >= 0.5) ++big;
  out[big] = step(gold[big], 1);
  Judgement j = judge(hv(out), hv(gold), jo);
  expect(j.pass && j.max_abs == 0x1p-12, "double (fp16 golden): a one-ulp flip passes");
  out[big] = step(gold[big], 2);
  expect(!judge(hv(out), hv(gold), jo).pass, "double (fp16 golden): two ulps fail");
  for (int i = 0; i < n; ++i) out[i] = step(gold[i], 1);
  expect(!judge(hv(out), hv(gold), jo).pass,
         "double (fp16 golden): one ulp everywhere fails (relative L2)");
}

// Issue 21: every standard compares which entries are NaN / +Inf / -Inf, not only finite values.
void test_nonfinite_pattern() {
  const core::Standard standards[] = {core::Standard::exact, core::Standard::single,
                                      core::Standard::dbl};
  for (core::Standard st : standards) {
    std::vector<float> gold = {1.f, NAN, INFINITY, -INFINITY, 2.f, 3.f};
    std::vector<float> out = gold;
    std::vector<float> plain = gold;  // the double standard's baseline
    TensorView pv = view_of(plain);
    JudgeOptions jo;
    jo.standard = st;
    if (st == core::Standard::dbl) jo.baseline = &pv;
    expect(judge(view_of(out), view_of(gold), jo).pass, "pattern: the golden's pattern passes");
    const std::pair<int, float> wrong[] = {
        {1, 0.f},        // finite where the golden is NaN
        {2, -INFINITY},  // the other infinity
        {2, NAN},        // NaN where the golden is +Inf
        {3, 5.f},        // finite where the golden is -Inf
        {4, INFINITY},   // Inf where the golden is finite
        {5, NAN},        // NaN where the golden is finite
    };
    for (auto [i, v] : wrong) {
      // Element-wise, not `out = gold`: GCC 12 reports a false -Wstringop-overflow on the
      // inlined vector assignment.
      std::copy(gold.begin(), gold.end(), out.begin());
      out[static_cast<size_t>(i)] = v;
      const bool made_finite = std::isfinite(v), extra = !std::isfinite(gold[i]) ? false : true;
      jo.nonfinite = core::NonfiniteRule::exact;
      const Judgement j = judge(view_of(out), view_of(gold), jo);
      expect(!j.pass, "pattern: a wrong pattern fails");
      expect(j.nf_missing == (made_finite ? 1 : 0) && j.nf_extra == (extra ? 1 : 0) &&
                 j.nf_class == (!made_finite && !extra ? 1 : 0),
             "pattern: the failure is counted by kind");
      // pattern: NaN and the infinities interchangeable; the positions still exact.
      jo.nonfinite = core::NonfiniteRule::pattern;
      expect(judge(view_of(out), view_of(gold), jo).pass == (!made_finite && !extra),
             "rule pattern: only the kind of a non-finite element may differ");
      // covers: more non-finite elements allowed, never a finite one where the golden has none.
      jo.nonfinite = core::NonfiniteRule::covers;
      expect(judge(view_of(out), view_of(gold), jo).pass == !made_finite,
             "rule covers: only a non-finite made finite fails");
    }
  }
}

void test_parser() {
  CaseSchema schema;
  schema.ops["jagged_to_padded_dense"] = {"jagged_to_padded_dense",
                                          {"lengths", "E", "max_seq_len", "offsets_dtype"}};
  const std::string ok =
      "op: jagged_to_padded_dense\ncases:\n  - id: a\n    dtype: [fp32, bf16]\n"
      "    offsets_dtype: [int32, int64]\n    lengths: {gen: skewed, B: 5, max: 8}\n    "
      "max_seq_len: 4\n";
  CaseFile f = parse_case_text(ok, "t.yaml", FileKind::cases, schema);
  expect(expand(f).size() == 4, "parser: dtype x offsets_dtype expands to 4 rows");
  auto error_of = [&](const std::string& text) {
    try {
      parse_case_text(text, "t.yaml", FileKind::cases, schema);
    } catch (const CaseFileError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  expect(error_of("op: jagged_to_padded_dense\ncases:\n  - id: a\n    max_seq_len: x\n")
                 .find("t.yaml:4:18: case 'a': field 'max_seq_len': expected an integer") == 0,
         "parser: malformed value names line, column, case, field");
  expect(
      error_of(
          "op: jagged_to_padded_dense\ncases:\n  - id: a\n    lengths: {gen: zipf, B: 3, max: 2}\n")
              .find("field 'lengths.gen': unknown generator") != std::string::npos,
      "parser: unknown generator");
  expect(error_of("op: jagged_to_padded_dense\ncases:\n  - id: a\n    E: [1]\n    E: [2]\n")
                 .find("duplicate key") != std::string::npos,
         "parser: duplicate key");
  expect(error_of("op: jagged_to_padded_dense\ncases: 3\n").find("expected a list") !=
             std::string::npos,
         "parser: cases must be a list");
  expect(error_of("[1, 2]").find("must be a mapping") != std::string::npos, "parser: root mapping");
}

void test_generators() {
  // Fixed values pin the formulas of docs/cases.md (python/recops/testing.py must agree).
  LengthsSpec u{"uniform", {}, 4, 10, 0, 0};
  const auto a = make_lengths(u, 7), b = make_lengths(u, 7);
  expect(a == b, "generators: deterministic");
  for (int64_t v : a) expect(v >= 0 && v < 10, "generators: uniform in [0, max)");
  LengthsSpec s{"skewed", {}, 1000, 64, 0, 0};
  for (int64_t v : make_lengths(s, 1))
    expect(v >= 0 && v <= 128, "generators: skewed in [0, 2 max]");
  expect(offsets_from_lengths({2, 0, 3}) == std::vector<int64_t>({0, 2, 2, 5}),
         "generators: offsets");
  // Values computed by python/recops/testing.py (2026-11-29): both sides must draw the same inputs.
  expect(core::hash64(0, 0) == 7905728728188956330ull, "generators: hash64(0, 0) matches Python");
  LengthsSpec sk{"skewed", {}, 8, 64, 0, 0};
  expect(make_lengths(sk, 1) == std::vector<int64_t>({14, 20, 83, 3, 66, 28, 14, 10}),
         "generators: skewed lengths match Python");
  LengthsSpec un{"uniform", {}, 8, 100, 0, 0};
  expect(make_lengths(un, 7) == std::vector<int64_t>({43, 84, 80, 11, 70, 68, 50, 49}),
         "generators: uniform lengths match Python");
}

// A recording from another machine is untrusted: a header whose shape's byte count overflows
// int64 ([2^61 + 2] fp64 over 16 bytes) is refused before anything is allocated (issue 21).
void test_safetensors_overflow() {
  const std::string path = "selftest_overflow.safetensors";
  const std::string header =
      R"({"t":{"dtype":"F64","shape":[2305843009213693954],"data_offsets":[0,16]}})";
  {
    std::ofstream f(path, std::ios::binary);
    const uint64_t n = header.size();
    f.write(reinterpret_cast<const char*>(&n), 8);
    f << header << std::string(16, '\0');
  }
  SafetensorsFile file;
  const Status st = read_safetensors(path, &file);
  expect(!st.ok() && st.message().find("needs more than 2^63-1 bytes") != std::string::npos,
         "safetensors: an overflowing shape is refused");
  std::remove(path.c_str());
  // Numbers that are not counts: a float past int64 in data_offsets (the fuzzer's find: the
  // conversion was undefined), a fractional or negative dimension, an offset past 2^63.
  const std::pair<std::string, std::string> cases[] = {
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,3.05843e19]}})",
       "data_offsets must be two integers"},
      {R"({"t":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", "shape must be an array"},
      {R"({"t":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "shape must be an array"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,9223372036854775808]}})",
       "data_offsets must be two integers"},
      {R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "data_offsets must be two"}};
  for (const auto& [h, want] : cases) {
    {
      std::ofstream f(path, std::ios::binary);
      const uint64_t n = h.size();
      f.write(reinterpret_cast<const char*>(&n), 8);
      f << h << std::string(16, '\0');
    }
    const Status s = read_safetensors(path, &file);
    const std::string what = "safetensors: a header number that is no count is refused: " + h;
    expect(!s.ok() && s.message().find(want) != std::string::npos, what.c_str());
    std::remove(path.c_str());
  }
}
}  // namespace

// gen.cpp's bf16 / fp16 rounding from double gives recops/dtype.h's bits: every value of each
// format, the midpoints between neighbours (ties to even) and just off them, the edges of the
// normal range, overflow to infinity, non-finite and signed zero, and random doubles over every
// exponent that matters.
void test_fast_rounding() {
  auto same = [](double x) {
    return bf16_bits_from_double(x) == bf16_from_double(x).bits &&
           half_bits_from_double(x) == half_from_double(x).bits;
  };
  int64_t bad = 0, tried = 0;
  auto probe = [&](double x) {
    ++tried;
    if (!same(x)) {
      if (bad < 5) std::printf("  fast rounding differs at %.17g\n", x);
      ++bad;
    }
  };
  for (uint32_t b = 0; b < 65536; ++b) {
    for (int fmt = 0; fmt < 2; ++fmt) {
      const auto h = static_cast<uint16_t>(b);
      const double v = fmt ? to_double(Half{h}) : to_double(BFloat16{h});
      const auto hn = static_cast<uint16_t>(b + 1 == 65536 ? b : b + 1);
      const double next = fmt ? to_double(Half{hn}) : to_double(BFloat16{hn});
      probe(v);
      if (std::isfinite(v) && std::isfinite(next)) {
        const double mid = v + (next - v) / 2;  // exact: the formats have few mantissa bits
        probe(mid);
        probe(std::nextafter(mid, -INFINITY));
        probe(std::nextafter(mid, INFINITY));
      }
    }
  }
  const double edges[] = {0.0,
                          -0.0,
                          INFINITY,
                          -INFINITY,
                          NAN,
                          65504.0,
                          65520.0,
                          65519.99,
                          6.103515625e-05,
                          6.1035e-05,
                          3.3895313892515355e38,
                          3.4e38,
                          1e300,
                          1.1754943508222875e-38,
                          1.17549e-38,
                          5e-324,
                          -1e-40};
  for (double x : edges) probe(x);
  uint64_t st = 12345;
  for (int i = 0; i < 2000000; ++i) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    const double m = 1.0 + static_cast<double>(st >> 11) * 0x1.0p-53;  // [1, 2)
    const int e = static_cast<int>((st >> 3) % 300) - 150;
    probe(((st & 1) ? -m : m) * std::ldexp(1.0, e));
  }
  // load_value's table and shift decode every bit pattern as recops/dtype.h does.
  auto same_value = [](double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b));
  };
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto h = static_cast<uint16_t>(b);
    if (!same_value(load_value(&h, DType::fp16), to_double(Half{h})) ||
        !same_value(load_value(&h, DType::bf16), to_double(BFloat16{h})))
      ++bad;
    if (b < 256) {
      const auto q = static_cast<uint8_t>(b);
      if (!same_value(load_value(&q, DType::fp8_e4m3), to_double(Fp8E4M3{q}))) ++bad;
    }
  }
  expect(bad == 0, "fast rounding: bf16/fp16 from double match recops/dtype.h");
  std::printf("  fast rounding: %lld values, %lld differ\n", static_cast<long long>(tried),
              static_cast<long long>(bad));
}

int main() {
  test_exact();
  test_single();
  test_double();
  test_double_rounded_golden();
  test_nonfinite_pattern();
  test_fast_rounding();
  test_parser();
  test_generators();
  test_safetensors_overflow();
  if (failures) {
    std::printf("%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("selftest: all checks passed\n");
  return 0;
}
