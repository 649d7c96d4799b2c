// jagged/jagged_dense_flash_attention/reference.cpp: the golden (accuracy.md): jagged_ops.md §2.9's
// formulas as plain loops in fp64, one sequence at a time, each output rounded once to its dtype.
// With Params::plain the same loops run in fp32 (fp64 for fp64) with p and ds rounded to the input
// dtype before their products: the double standard's same-precision baseline. Shares no code with
// cpu/ or cuda/ (only the goldens-only common/golden_offsets.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "ops/jagged/common/golden_offsets.h"
#include "ops/jagged/jagged_dense_flash_attention/impls.h"

namespace recops::ops::jagged_dense_flash_attention_ns {
namespace {
int64_t offset(const Params& p, int64_t i) {
  const int64_t v = golden_offset(p.seq_offsets, p.offsets_int64, p.offsets_stride, i);
  return v < 0 ? 0 : (v > p.total_L ? p.total_L : v);
}

// A: the arithmetic type (double for the golden; float, or double for fp64, for the baseline).
// R(x): the baseline's rounding of p and ds to the input dtype; the identity for the golden.
template <class T, class A>
void compute(const Params& p) {
  const T* q = static_cast<const T*>(p.q);
  const T* k = static_cast<const T*>(p.k);
  const T* v = static_cast<const T*>(p.v);
  const T* bias = static_cast<const T*>(p.bias);
  const T* grad = static_cast<const T*>(p.grad);
  const T* out_in = static_cast<const T*>(p.out);
  const float* lse_in = static_cast<const float*>(p.lse);
  const A inf = std::numeric_limits<A>::infinity();
  const int64_t T_ = p.T, D = p.D;
  auto R = [&](A x) -> A {
    if (!p.plain) return x;
    return static_cast<A>(to_double(from_double<T>(static_cast<double>(x))));
  };
  auto X = [](T x) { return static_cast<A>(to_double(x)); };
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t start = offset(p, b);
    const int64_t end = std::max(start, offset(p, b + 1));
    const int64_t n = std::min(end - start, p.max_L);
    auto Q = [&](int64_t l, int64_t d) { return X(q[(start + l) * p.q_row + d]); };
    auto V = [&](int64_t l, int64_t d) { return X(v[(start + l) * p.v_row + d]); };
    auto K = [&](int64_t d, int64_t t) { return X(k[b * p.k_sb + d * p.k_sd + t * p.k_st]); };
    auto Bias = [&](int64_t l, int64_t t) {
      return X(bias[b * p.bias_sb + l * p.bias_sl + t * p.bias_st]);
    };
    auto score = [&](int64_t l, int64_t t) {
      A s = 0;
      for (int64_t d = 0; d < D; ++d) s += Q(l, d) * K(d, t);
      return s + Bias(l, t);
    };
    if (!p.backward) {
      T* out = static_cast<T*>(p.out);
      float* lse = static_cast<float*>(p.lse);
      std::vector<A> s(static_cast<size_t>(n));
      for (int64_t t = 0; t < T_; ++t) {
        // The max propagates a NaN score (m stays NaN once it is), so that a NaN score makes the
        // column's lse and out NaN even when every other score is -inf (spec: "a NaN score makes
        // its column NaN"; a max that skipped it would take the empty column's out 0).
        A m = -inf;
        for (int64_t l = 0; l < n; ++l) {
          s[l] = score(l, t);
          if (s[l] > m || std::isnan(s[l])) m = s[l];
        }
        // n = 0 or every score -inf: out 0, lse -inf.
        A sum = 0;
        if (m != -inf)
          for (int64_t l = 0; l < n; ++l) sum += std::exp(s[l] - m);
        const A L = m == -inf ? -inf : m + std::log(sum);
        lse[b * T_ + t] = static_cast<float>(L);
        for (int64_t d = 0; d < D; ++d) {
          A o = 0;
          if (L != -inf)
            for (int64_t l = 0; l < n; ++l) o += R(std::exp(s[l] - L)) * V(l, d);
          out[(b * T_ + t) * D + d] = from_double<T>(static_cast<double>(o));
        }
      }
      continue;
    }
    T* dq = static_cast<T*>(p.dq);
    T* dk = static_cast<T*>(p.dk);
    T* dv = static_cast<T*>(p.dv);
    T* dbias = static_cast<T*>(p.dbias);
    auto G = [&](int64_t t, int64_t d) { return X(grad[b * p.grad_sb + t * p.grad_st + d]); };
    auto O = [&](int64_t t, int64_t d) { return X(out_in[b * p.out_sb + t * p.out_st + d]); };
    std::vector<A> P(static_cast<size_t>(n * T_)), dS(static_cast<size_t>(n * T_));
    for (int64_t t = 0; t < T_; ++t) {
      A delta = 0;
      for (int64_t d = 0; d < D; ++d) delta += O(t, d) * G(t, d);
      const A L = static_cast<A>(lse_in[b * p.lse_sb + t * p.lse_st]);
      for (int64_t l = 0; l < n; ++l) {
        const A pr = L == -inf ? A(0) : std::exp(score(l, t) - L);
        A dp = 0;
        for (int64_t d = 0; d < D; ++d) dp += G(t, d) * V(l, d);
        P[l * T_ + t] = pr;
        dS[l * T_ + t] = pr * (dp - delta);
      }
    }
    for (int64_t l = 0; l < p.S; ++l)
      for (int64_t t = 0; t < T_; ++t)
        dbias[(b * p.S + l) * T_ + t] =
            from_double<T>(l < n ? static_cast<double>(dS[l * T_ + t]) : 0.0);
    for (int64_t l = 0; l < end - start; ++l)
      for (int64_t d = 0; d < D; ++d) {
        A gq = 0, gv = 0;
        if (l < n)
          for (int64_t t = 0; t < T_; ++t) {
            gq += R(dS[l * T_ + t]) * K(d, t);
            gv += R(P[l * T_ + t]) * G(t, d);
          }
        dq[(start + l) * D + d] = from_double<T>(static_cast<double>(gq));
        dv[(start + l) * D + d] = from_double<T>(static_cast<double>(gv));
      }
    for (int64_t d = 0; d < D; ++d)
      for (int64_t t = 0; t < T_; ++t) {
        A gk = 0;
        for (int64_t l = 0; l < n; ++l) gk += Q(l, d) * R(dS[l * T_ + t]);
        dk[(b * D + d) * T_ + t] = from_double<T>(static_cast<double>(gk));
      }
  }
}
}  // namespace

Status run_reference(const Params& p, const Context&) {
  const bool ok = visit_floating(p.dtype, [&](auto t) {
    using T = decltype(t);
    using Plain = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if (p.plain)
      compute<T, Plain>(p);
    else
      compute<T, double>(p);
  });
  if (!ok)
    return Status(StatusCode::internal,
                  "jagged_dense_flash_attention: reference reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
