// training/chunk_scaled_dot_kkt/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formula in fp64, one element of A at a time (the dot k_t·k_j summed afresh, Γ = exp(G_t − G_j)
// of the non-positive-side difference as written), rounded once to fp32. With p.plain, the double
// standard's plain baseline: the same loops with S = fp32 (fp64 for fp64 k) for the dot, the
// difference, the exponential and the products. Includes params.h and core only; shares no code
// with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <cmath>
#include <type_traits>

#include "ops/training/chunk_scaled_dot_kkt/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H;
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t t = first; t < last; ++t) {
      const int64_t c0 = first + (t - first) / p.BT * p.BT;  // t's chunk start
      const int64_t rt = b * p.T + t;                        // t's flattened row
      for (int64_t hv = 0; hv < p.HV; ++hv) {
        const int64_t h = hv / group;
        const S beta = static_cast<S>(load(p.beta, p.beta_dtype, rt * p.HV + hv));
        for (int64_t j = 0; j < p.BT; ++j) {
          const int64_t s = c0 + j;  // the column's position
          S a = 0;
          if (s < t) {
            const int64_t rs = b * p.T + s;
            S dot = 0;
            for (int64_t c = 0; c < p.K; ++c)
              dot += static_cast<S>(load(p.k, p.k_dtype, (rt * p.H + h) * p.K + c)) *
                     static_cast<S>(load(p.k, p.k_dtype, (rs * p.H + h) * p.K + c));
            S gamma = 1;
            if (p.g) {
              const S d = static_cast<S>(load(p.g, p.g_dtype, rt * p.HV + hv)) -
                          static_cast<S>(load(p.g, p.g_dtype, rs * p.HV + hv));
              gamma = p.gate_log2 ? std::exp2(d) : std::exp(d);
            }
            a = beta * dot * gamma;
          }
          p.A[(rt * p.HV + hv) * p.BT + j] = static_cast<float>(a);
        }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.k_dtype != DType::fp64)
    golden<float>(p);
  else
    golden<double>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
