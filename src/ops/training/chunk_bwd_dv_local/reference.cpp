// training/chunk_bwd_dv_local/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formula in fp64 (the inputs widened to fp64 once), one output element at a time over the
// flattened rows b·T + t:
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
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_bwd_dv_local/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {
using training::golden::widened;

// S: the arithmetic type (double for the golden; float or double for the plain baseline). The
// inputs are widened once; dv (fp64 here) is rounded to its dtype at the end.
template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H;
  const int64_t rows = p.B * p.T;
  const std::vector<double> q = widened(p.q, p.q_dtype, rows * p.H * p.K);
  const std::vector<double> k = widened(p.k, p.k_dtype, rows * p.H * p.K);
  const std::vector<double> dout = widened(p.dout, p.do_dtype, rows * p.HV * p.V);
  const std::vector<double> G = p.g ? widened(p.g, p.g_dtype, rows * p.HV) : std::vector<double>();
  // Sequence n: flattened rows [first_row[n], first_row[n + 1]) without offsets, else the offsets'
  // own rows (B = 1).
  std::vector<int64_t> edge(static_cast<size_t>(2 * p.N));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t e = 0; e < 2; ++e)
      edge[static_cast<size_t>(2 * n + e)] =
          !p.seq_offsets                ? (n + e) * p.T
          : p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[n + e]
                                        : static_cast<const int64_t*>(p.seq_offsets)[n + e];
  std::vector<double> dv(static_cast<size_t>(rows * p.HV * p.V), 0.0);
  std::vector<S> coef(static_cast<size_t>(p.BT));
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t first = edge[static_cast<size_t>(2 * n)];
    const int64_t last = edge[static_cast<size_t>(2 * n + 1)];
    for (int64_t j = first; j < last; ++j) {
      const int64_t ci = (j - first) / p.BT;                       // j's chunk in its sequence
      const int64_t c1 = std::min(last, first + (ci + 1) * p.BT);  // one past its last position
      for (int64_t hv = 0; hv < p.HV; ++hv) {
        const int64_t h = hv / group;
        for (int64_t i = j; i < c1; ++i) {
          S dot = 0;
          for (int64_t c = 0; c < p.K; ++c)
            dot += static_cast<S>(q[static_cast<size_t>((i * p.H + h) * p.K + c)]) *
                   static_cast<S>(k[static_cast<size_t>((j * p.H + h) * p.K + c)]);
          S gamma = 1;
          if (p.g) {
            const S d = static_cast<S>(G[static_cast<size_t>(i * p.HV + hv)]) -
                        static_cast<S>(G[static_cast<size_t>(j * p.HV + hv)]);
            gamma = p.gate_log2 ? std::exp2(d) : std::exp(d);
          }
          S a = static_cast<S>(p.scale) * gamma * dot;
          if (p.plain)  // the matrix stored in do's dtype, as a composition rounds it
            visit_floating(p.do_dtype, [&](auto tag) {
              using X = decltype(tag);
              a = static_cast<S>(to_double(from_double<X>(static_cast<double>(a))));
            });
          coef[static_cast<size_t>(i - j)] = a;
        }
        for (int64_t v = 0; v < p.V; ++v) {
          S sum = 0;
          for (int64_t i = j; i < c1; ++i)
            sum += coef[static_cast<size_t>(i - j)] *
                   static_cast<S>(dout[static_cast<size_t>((i * p.HV + hv) * p.V + v)]);
          dv[static_cast<size_t>((j * p.HV + hv) * p.V + v)] = static_cast<double>(sum);
        }
      }
    }
  }
  visit_floating(p.dv_dtype, [&](auto tag) {
    using X = decltype(tag);
    X* out = static_cast<X*>(p.dv);
    for (size_t i = 0; i < dv.size(); ++i) out[i] = from_double<X>(dv[i]);
  });
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
