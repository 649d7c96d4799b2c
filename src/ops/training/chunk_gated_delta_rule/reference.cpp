// training/chunk_gated_delta_rule/reference.cpp: the golden (accuracy.md): training_ops.md §4.2's
// token-by-token recurrence in fp64, unchunked, per sequence and value head hv (key head
// h = hv / (HV / H)), with S [K, V] = initial_state (or 0):
//   S ← exp(g_t)·S;  S ← S + β_t·k_t ⊗ (v_t − Sᵀk_t);  o_t = scale·Sᵀq_t;  final_state = S_last
// With l2norm, q_t and k_t are first scaled by 1/sqrt(Σ x² + eps) (§3.5), in fp64 and unrounded.
// Each output is rounded to its dtype once. Includes params.h and core only; shares no code with
// cpu/ (which composes the chunked sub-ops) or with the sub-ops' goldens.
#include <cmath>
#include <vector>

#include "ops/training/chunk_gated_delta_rule/impls.h"

namespace recops::ops::chunk_gated_delta_rule_ns {
namespace {

// The n floating elements from element `at` of a tensor of dtype t, widened exactly to fp64.
void read(const void* base, DType t, int64_t at, int64_t n, double* dst) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    const X* s = static_cast<const X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) dst[i] = to_double(s[i]);
  });
}

void write(void* base, DType t, int64_t at, int64_t n, const double* src) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    X* d = static_cast<X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) d[i] = from_double<X>(src[i]);
  });
}

int64_t offset(const Params& p, int64_t n) {
  return p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                     : static_cast<const int64_t*>(p.seq_offsets)[n];
}

void normalize(std::vector<double>& x, double eps) {
  double ss = 0;
  for (double e : x) ss += e * e;
  const double r = 1.0 / std::sqrt(ss + eps);
  for (double& e : x) e *= r;
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, T = p.T;
  const int64_t group = H > 0 ? HV / H : 1;
  std::vector<double> S(static_cast<size_t>(K * V)), q(static_cast<size_t>(K)),
      k(static_cast<size_t>(K)), v(static_cast<size_t>(V)), kv(static_cast<size_t>(V)),
      o(static_cast<size_t>(V));
  for (int64_t n = 0; n < p.N; ++n) {
    // Flattened rows [first, last) of sequence n.
    const int64_t first = p.seq_offsets ? offset(p, n) : n * T;
    const int64_t last = p.seq_offsets ? offset(p, n + 1) : (n + 1) * T;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t h = hv / group;
      const int64_t state_at = (n * HV + hv) * K * V;
      if (p.h0)
        read(p.h0, p.h0_dtype, state_at, K * V, S.data());
      else
        std::fill(S.begin(), S.end(), 0.0);
      for (int64_t r = first; r < last; ++r) {
        read(p.q, p.q_dtype, (r * H + h) * K, K, q.data());
        read(p.k, p.k_dtype, (r * H + h) * K, K, k.data());
        read(p.v, p.v_dtype, (r * HV + hv) * V, V, v.data());
        double g = 0, beta = 0;
        read(p.g, p.g_dtype, r * HV + hv, 1, &g);
        read(p.beta, p.beta_dtype, r * HV + hv, 1, &beta);
        if (p.l2norm) {
          normalize(q, p.l2norm_eps);
          normalize(k, p.l2norm_eps);
        }
        const double decay = std::exp(g);
        for (double& s : S) s *= decay;
        // kv = Sᵀk (the decayed state's prediction of v_t).
        std::fill(kv.begin(), kv.end(), 0.0);
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) kv[j] += S[i * V + j] * k[i];
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) S[i * V + j] += beta * k[i] * (v[j] - kv[j]);
        std::fill(o.begin(), o.end(), 0.0);
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) o[j] += S[i * V + j] * q[i];
        for (double& e : o) e *= p.scale;
        write(p.o, p.o_dtype, (r * HV + hv) * V, V, o.data());
      }
      if (p.ht) write(p.ht, DType::fp32, state_at, K * V, S.data());
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::chunk_gated_delta_rule_ns
