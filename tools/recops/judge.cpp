// tools/recops/judge.cpp: accuracy.md's standards over one output.
#include "tools/recops/judge.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/parallel.h"
#include "tools/recops/gen.h"

namespace recops::cli {
namespace {

uint64_t bits_at(const char* base, int64_t off, int64_t es) {
  uint64_t b = 0;
  std::memcpy(&b, base + off * es, static_cast<size_t>(es));
  return b;
}

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

}  // namespace

uint64_t poison_bits(DType t, int variant) {
  const bool v1 = variant != 0;
  switch (t) {
    case DType::fp64: return v1 ? 0xFFF8DEADBEEF0002ull : 0x7FF8DEADBEEF0001ull;
    case DType::fp32: return v1 ? 0xFFDEAD02u : 0x7FDEAD01u;
    case DType::fp16: return v1 ? 0xFE5Bu : 0x7E5Au;
    case DType::bf16: return v1 ? 0xFFDBu : 0x7FDAu;
    case DType::fp8_e4m3: return v1 ? 0x7Fu : 0xFFu;  // e4m3fn has only these two NaNs
    case DType::int32: return v1 ? 0x5A5A5A5Au : 0xA5A5A5A5u;
    case DType::int64: return v1 ? 0x5A5A5A5A5A5A5A5Aull : 0xA5A5A5A5A5A5A5A5ull;
    case DType::uint8: return v1 ? 0x5Au : 0xA5u;
    case DType::boolean: return v1 ? 0x5Au : 0xA5u;  // not a valid bool: never a real value
  }
  return 0;
}

void poison_fill(void* data, DType t, int64_t n, int variant) {
  const uint64_t b = poison_bits(t, variant);
  const int64_t es = dtype_size(t);
  auto* p = static_cast<char*>(data);
  core::parallel_for(n, int64_t{1} << 16, 0, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) std::memcpy(p + i * es, &b, static_cast<size_t>(es));
  });
}

bool bit_identical(const TensorView& a, const TensorView& b, int64_t* first_diff) {
  const int64_t es = dtype_size(a.dtype);
  if (a.is_contiguous() && b.is_contiguous()) {
    const auto* pa = static_cast<const char*>(a.data);
    const auto* pb = static_cast<const char*>(b.data);
    const size_t bytes = static_cast<size_t>(a.numel() * es);
    if (std::memcmp(pa, pb, bytes) == 0) return true;
    for (int64_t i = 0; i < a.numel(); ++i)
      if (std::memcmp(pa + i * es, pb + i * es, static_cast<size_t>(es)) != 0) {
        if (first_diff) *first_diff = i;
        break;
      }
    return false;
  }
  std::vector<int64_t> offs_b;
  offs_b.reserve(static_cast<size_t>(b.numel()));
  for_each_element(b, [&](int64_t, int64_t off) { offs_b.push_back(off); });
  bool same = true;
  const auto* pa = static_cast<const char*>(a.data);
  const auto* pb = static_cast<const char*>(b.data);
  for_each_element(a, [&](int64_t i, int64_t off) {
    if (!same) return;
    if (std::memcmp(pa + off * es, pb + offs_b[static_cast<size_t>(i)] * es,
                    static_cast<size_t>(es)) != 0) {
      same = false;
      if (first_diff) *first_diff = i;
    }
  });
  return same;
}

Judgement judge(const TensorView& out, const TensorView& gold, const JudgeOptions& opt) {
  Judgement j;
  const DType t = out.dtype;
  const int64_t es = dtype_size(t);
  const uint64_t poison = poison_bits(t, opt.poison_variant);
  const auto* po = static_cast<const char*>(out.data);
  const auto* pg = static_cast<const char*>(gold.data);
  const bool floating = is_floating(t);

  // Element offsets of gold and baseline in out's iteration order (the identity when contiguous,
  // the usual case, so that huge outputs need no index table).
  std::vector<int64_t> goff_tab, boff_tab;
  const bool gold_dense = gold.is_contiguous();
  const bool base_dense = !opt.baseline || opt.baseline->is_contiguous();
  if (!gold_dense) for_each_element(gold, [&](int64_t, int64_t off) { goff_tab.push_back(off); });
  if (!base_dense)
    for_each_element(*opt.baseline, [&](int64_t, int64_t off) { boff_tab.push_back(off); });
  auto goff = [&](int64_t i) { return gold_dense ? i : goff_tab[static_cast<size_t>(i)]; };
  auto boff = [&](int64_t i) { return base_dense ? i : boff_tab[static_cast<size_t>(i)]; };

  // `small` of accuracy.md: the dtype's smallest normal times the output's typical magnitude.
  double magnitude = opt.magnitude;
  if (floating && magnitude <= 0) {
    double ss = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < gold.numel(); ++i) {
      const double g = load_value(pg + goff(i) * es, t);
      if (std::isfinite(g)) ss += g * g, ++cnt;
    }
    magnitude = cnt ? std::sqrt(ss / static_cast<double>(cnt)) : 1.0;
    if (!(magnitude > 0)) magnitude = 1.0;
  }
  const double T = core::threshold(t);
  const double small = core::smallest_normal(t) * magnitude;

  double diff2 = 0, gold2 = 0, rel_sum = 0;
  double base_max_abs = 0, base_diff2 = 0;
  double max_beyond_ulp = 0;  // double standard: max over i of |out_i - gold_i| - ulp(gold_i), >= 0
  int64_t rel_count = 0;
  auto note = [&](int64_t i, const std::string& what) {
    if (j.detail.empty()) j.detail = "element " + std::to_string(i) + ": " + what;
  };

  auto count_nonfinite = [&](double o, double g) {
    if (std::isfinite(g) && !std::isfinite(o))
      ++j.nf_extra;
    else if (!std::isfinite(g) && std::isfinite(o))
      ++j.nf_missing;
    else if (!std::isfinite(g))
      ++j.nf_class;
  };
  for_each_element(out, [&](int64_t i, int64_t off) {
    const int64_t gofs = goff(i);
    const uint64_t ob = bits_at(po, off, es), gb = bits_at(pg, gofs, es);
    if (ob == poison) {
      if (gb == poison) {
        ++j.ambiguous;  // cannot tell from this run alone
        return;
      }
      ++j.unwritten;
      note(i, "not written (still holds the poison)");
      return;
    }
    const double o = load_value(po + off * es, t), g = load_value(pg + gofs * es, t);
    if (!floating || opt.standard == core::Standard::exact) {
      bool same = ob == gb || (floating && std::isnan(o) && std::isnan(g)) || (o == g && o == 0);
      // The looser non-finite rules (floating outputs only).
      if (!same && floating && opt.nonfinite != core::NonfiniteRule::exact && !std::isfinite(o) &&
          (!std::isfinite(g) || opt.nonfinite == core::NonfiniteRule::covers))
        same = true;
      if (!same) {
        ++j.mismatched;
        if (floating && !std::isfinite(o) && std::isfinite(g)) ++j.nonfinite;
        if (floating) count_nonfinite(o, g);
        note(i, "got " + fmt(o) + ", expected " + fmt(g));
      }
      if (std::isfinite(o) && std::isfinite(g)) {
        const double d = std::fabs(o - g);
        j.max_abs = std::max(j.max_abs, d);
        diff2 += d * d;
        gold2 += g * g;
      }
      return;
    }
    // Floating standards.
    if (!std::isfinite(g)) {
      const bool same = (std::isnan(g) && std::isnan(o)) || o == g ||
                        (opt.nonfinite != core::NonfiniteRule::exact && !std::isfinite(o));
      if (!same) {
        ++j.nonfinite;
        count_nonfinite(o, g);
        note(i, "got " + fmt(o) + ", expected " + fmt(g));
      }
      return;
    }
    if (!std::isfinite(o)) {
      if (opt.nonfinite == core::NonfiniteRule::covers)
        return;  // the op's tile or chunk, its README
      ++j.nonfinite;
      ++j.nf_extra;
      note(i, "got " + fmt(o) + " where the golden is finite (" + fmt(g) + ")");
      return;
    }
    const double d = std::fabs(o - g);
    j.max_abs = std::max(j.max_abs, d);
    diff2 += d * d;
    gold2 += g * g;
    if (opt.standard == core::Standard::single) {
      if (std::fabs(g) < small) {
        if (d > T * small) {
          ++j.mismatched;
          note(i, "|gold| < small and abs error " + fmt(d) + " > T*small");
        }
      } else {
        const double rel = d / std::fabs(g);
        rel_sum += rel;
        ++rel_count;
        j.max_rel = std::max(j.max_rel, rel);
        if (rel > 10 * T) {
          ++j.mismatched;
          note(i,
               "rel error " + fmt(rel) + " > 10*T (got " + fmt(o) + ", expected " + fmt(g) + ")");
        }
      }
    } else if (opt.baseline) {
      max_beyond_ulp = std::max(max_beyond_ulp, d - core::output_ulp(t, g));
      const double b = load_value(static_cast<const char*>(opt.baseline->data) + boff(i) * es, t);
      if (std::isfinite(b)) {
        base_max_abs = std::max(base_max_abs, std::fabs(b - g));
        base_diff2 += (b - g) * (b - g);
      }
    }
  });

  j.rel_l2 = gold2 > 0 ? std::sqrt(diff2 / gold2) : std::sqrt(diff2);
  if (opt.standard == core::Standard::single && floating) {
    j.mean_rel = rel_count ? rel_sum / static_cast<double>(rel_count) : 0;
    if (j.mean_rel > T && j.detail.empty())
      j.detail = "mean rel error " + fmt(j.mean_rel) + " > T = " + fmt(T);
    if (j.mean_rel > T) ++j.mismatched;
  }
  if (opt.standard == core::Standard::dbl && floating) {
    if (!opt.baseline) {
      j.detail = "the double standard needs the driver's plain baseline; none was given";
      ++j.mismatched;
    } else {
      const double base_rel_l2 = gold2 > 0 ? std::sqrt(base_diff2 / gold2) : std::sqrt(base_diff2);
      // accuracy.md's max-abs rule, against a golden that is rounded to the output dtype: one
      // ulp of |out - gold| is that rounding (judge.h), the rest must meet 2 baseline + T/8.
      const bool ok_abs = max_beyond_ulp <= 2 * base_max_abs + T / 8;
      const bool ok_l2 = j.rel_l2 <= 2 * base_rel_l2 + T / 8;
      if (!ok_abs || !ok_l2) {
        ++j.mismatched;
        if (j.detail.empty())
          j.detail = "max abs " + fmt(j.max_abs) + " (beyond one ulp " + fmt(max_beyond_ulp) +
                     ") vs baseline " + fmt(base_max_abs) + ", rel L2 " + fmt(j.rel_l2) +
                     " vs baseline " + fmt(base_rel_l2) + " (bound 2*baseline + T/8)";
      }
    }
  }
  j.pass = j.mismatched == 0 && j.unwritten == 0 && j.nonfinite == 0;
  return j;
}

}  // namespace recops::cli
