// training/chunk_bwd_dv_local/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formula in fp64, one output element at a time:
//   dv[j, hv, v] = Σ_{j ≤ i ≤ c1} scale · exp(G_i − G_j) · (Σ_c q[i, h, c] · k[j, h, c])
//                  · do[i, hv, v]
// with c1 the last position of j's chunk, the exponential formed of the difference G_i − G_j as
// written (i ≥ j: non-positive for decays), rounded once to dv's dtype. The dot q_i·k_j is summed
// afresh for each (j, i, hv) and kept for the V columns.
// With p.plain, the double standard's plain baseline: the same loops with S = fp32 (fp64 for fp64
// do) for every sum, difference, exponential and product, and the chunk's matrix
// scale·Γ_ij·(q_i·k_j) stored in do's dtype before it multiplies do, as a framework composition
// (and fla's kernel, which casts it to do's dtype for the matmul) rounds it. Includes params.h
// and core only; shares no code with cpu/.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_bwd_dv_local/impls.h"

namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {

int64_t offset_value(const Params& p, int64_t n) {
  return p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n]
                                     : static_cast<const int64_t*>(p.seq_offsets)[n];
}

// Element i of a floating tensor of dtype t, in fp64 (exact).
double load(const void* base, DType t, int64_t i) {
  double v = 0;
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    v = to_double(static_cast<const X*>(base)[i]);
  });
  return v;
}

void store(void* base, DType t, int64_t i, double v) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    static_cast<X*>(base)[i] = from_double<X>(v);
  });
}

// x rounded to dtype t (the plain baseline's storage of an intermediate).
double round_to(DType t, double x) {
  double r = x;
  visit_floating(t, [&](auto y) {
    using X = decltype(y);
    r = to_double(from_double<X>(x));
  });
  return r;
}

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H;
  std::vector<S> coef(static_cast<size_t>(p.BT));
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p, n + 1) : p.T;
    for (int64_t j = first; j < last; ++j) {
      const int64_t ci = (j - first) / p.BT;                       // j's chunk in its sequence
      const int64_t c1 = std::min(last, first + (ci + 1) * p.BT);  // one past its last position
      const int64_t rj = b * p.T + j;
      for (int64_t hv = 0; hv < p.HV; ++hv) {
        const int64_t h = hv / group;
        S gj = 0;
        if (p.g) gj = static_cast<S>(load(p.g, p.g_dtype, rj * p.HV + hv));
        for (int64_t i = j; i < c1; ++i) {
          const int64_t ri = b * p.T + i;
          S dot = 0;
          for (int64_t c = 0; c < p.K; ++c)
            dot += static_cast<S>(load(p.q, p.q_dtype, (ri * p.H + h) * p.K + c)) *
                   static_cast<S>(load(p.k, p.k_dtype, (rj * p.H + h) * p.K + c));
          S gamma = 1;
          if (p.g) {
            const S d = static_cast<S>(load(p.g, p.g_dtype, ri * p.HV + hv)) - gj;
            gamma = p.gate_log2 ? std::exp2(d) : std::exp(d);
          }
          S a = static_cast<S>(p.scale) * gamma * dot;
          if (p.plain) a = static_cast<S>(round_to(p.do_dtype, static_cast<double>(a)));
          coef[static_cast<size_t>(i - j)] = a;
        }
        for (int64_t v = 0; v < p.V; ++v) {
          S sum = 0;
          for (int64_t i = j; i < c1; ++i)
            sum += coef[static_cast<size_t>(i - j)] *
                   static_cast<S>(
                       load(p.dout, p.do_dtype, ((b * p.T + i) * p.HV + hv) * p.V + v));
          store(p.dv, p.dv_dtype, (rj * p.HV + hv) * p.V + v, static_cast<double>(sum));
        }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.do_dtype != DType::fp64)
    golden<float>(p);
  else
    golden<double>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_bwd_dv_local_ns
