// training/common/gdn_golden.h: the element access that the GDN sub-ops' fp64 goldens
// (reference.cpp of chunk_scaled_dot_kkt, solve_tril, recompute_w_u_fwd, chunk_fwd_o,
// chunk_bwd_dv_local, chunk_gated_delta_rule_fwd_h, chunk_gated_delta_rule_bwd_dhu,
// chunk_bwd_dqkwg, prepare_wy_repr_bwd) and the composed ops' goldens (chunk_gated_delta_rule,
// chunk_kda) share: an offsets value, a floating element, a run of elements or a whole tensor
// widened to fp64, a value or a run stored or rounded to a dtype, and a row's fp64 l2
// normalisation. For the goldens only: no cpu/ or cuda/ implementation includes it, so a golden
// shares no code with the implementation it judges.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "recops/dtype.h"

namespace recops::ops::training::golden {

// Value n of an int32/int64 offsets array.
inline int64_t offset_value(const void* offsets, DType t, int64_t n) {
  return t == DType::int32 ? static_cast<const int32_t*>(offsets)[n]
                           : static_cast<const int64_t*>(offsets)[n];
}

// Element i of a floating tensor of dtype t, in fp64 (exact).
inline double load(const void* base, DType t, int64_t i) {
  double v = 0;
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    v = to_double(static_cast<const X*>(base)[i]);
  });
  return v;
}

// Stores v rounded to dtype t at element i; returns the stored value (in fp64, exact).
inline double store(void* base, DType t, int64_t i, double v) {
  double r = v;
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    static_cast<X*>(base)[i] = from_double<X>(v);
    r = to_double(static_cast<X*>(base)[i]);
  });
  return r;
}

// x rounded to dtype t (the plain baseline's storage of an intermediate).
inline double round_to(DType t, double x) {
  double r = x;
  visit_floating(t, [&](auto y) {
    using X = decltype(y);
    r = to_double(from_double<X>(x));
  });
  return r;
}

// A whole floating tensor (dtype t, n elements) widened to fp64 (exact); empty for nullptr.
inline std::vector<double> widened(const void* base, DType t, int64_t n) {
  std::vector<double> x(base ? static_cast<size_t>(n) : 0);
  if (base)
    visit_floating(t, [&](auto tag) {
      using X = decltype(tag);
      for (size_t i = 0; i < x.size(); ++i) x[i] = to_double(static_cast<const X*>(base)[i]);
    });
  return x;
}

// Every value of x rounded once into the floating tensor at base (dtype t).
template <class S>
void write_rounded(const std::vector<S>& x, void* base, DType t) {
  visit_floating(t, [&](auto tag) {
    using X = decltype(tag);
    for (size_t i = 0; i < x.size(); ++i)
      static_cast<X*>(base)[i] = from_double<X>(static_cast<double>(x[i]));
  });
}

// The n floating elements from element `at` of a tensor of dtype t, widened exactly to fp64.
inline void read_n(const void* base, DType t, int64_t at, int64_t n, double* dst) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    const X* s = static_cast<const X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) dst[i] = to_double(s[i]);
  });
}

// The n values src, each rounded once to dtype t, stored from element `at` of the tensor at base.
inline void write_n(void* base, DType t, int64_t at, int64_t n, const double* src) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    X* d = static_cast<X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) d[i] = from_double<X>(src[i]);
  });
}

// 1 / sqrt(Σ x² + eps) of a raw row x, in fp64.
inline double l2_norm_factor(const std::vector<double>& x, double eps) {
  double ss = 0;
  for (double e : x) ss += e * e;
  return 1.0 / std::sqrt(ss + eps);
}

// x scaled in place by l2_norm_factor(x, eps) (§3.5's l2norm, unrounded).
inline void l2_normalize(std::vector<double>& x, double eps) {
  const double r = l2_norm_factor(x, eps);
  for (double& e : x) e *= r;
}

}  // namespace recops::ops::training::golden
