// training/recompute_w_u_fwd/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's
// formula in fp64, one output element at a time (the sum over the chunk's columns formed afresh
// from the inputs, exp(G) of the non-positive cumsum as written), rounded once to the output's
// dtype. With p.plain, the double standard's plain baseline: the same loops with S = fp32 (fp64
// for an fp64 output) for the products, the exponential and the sum. Includes params.h and core
// only; shares no code with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>
#include <cmath>

#include "ops/training/recompute_w_u_fwd/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::recompute_w_u_fwd_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::store;

// One output (w: with_k, else u), S its arithmetic type.
template <class S>
void golden(const Params& p, bool with_k) {
  const int64_t group = p.HV / p.H;
  const int64_t D = with_k ? p.K : p.V;
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t t = first; t < last; ++t) {
      const int64_t c0 = first + (t - first) / p.BT * p.BT;  // t's chunk start
      const int64_t L = std::min(p.BT, last - c0);           // the chunk's rows
      const int64_t rt = b * p.T + t;                        // t's flattened row
      for (int64_t hv = 0; hv < p.HV; ++hv) {
        const int64_t h = hv / group;
        for (int64_t d = 0; d < D; ++d) {
          S acc = 0;
          for (int64_t j = 0; j < L; ++j) {
            const int64_t rj = b * p.T + c0 + j;
            const S a = static_cast<S>(load(p.Ai, p.Ai_dtype, (rt * p.HV + hv) * p.BT + j));
            S x = static_cast<S>(load(p.beta, p.beta_dtype, rj * p.HV + hv));
            if (with_k) {
              if (p.g) {
                const S gj = static_cast<S>(load(p.g, p.g_dtype, rj * p.HV + hv));
                x = x * (p.gate_log2 ? std::exp2(gj) : std::exp(gj));
              }
              x = x * static_cast<S>(load(p.k, p.k_dtype, (rj * p.H + h) * p.K + d));
            } else {
              x = x * static_cast<S>(load(p.v, p.v_dtype, (rj * p.HV + hv) * p.V + d));
            }
            acc += a * x;
          }
          if (with_k)
            store(p.w, p.k_dtype, (rt * p.HV + hv) * p.K + d, static_cast<double>(acc));
          else
            store(p.u, p.v_dtype, (rt * p.HV + hv) * p.V + d, static_cast<double>(acc));
        }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  const bool w64 = !p.plain || p.k_dtype == DType::fp64;
  const bool u64 = !p.plain || p.v_dtype == DType::fp64;
  if (w64)
    golden<double>(p, true);
  else
    golden<float>(p, true);
  if (u64)
    golden<double>(p, false);
  else
    golden<float>(p, false);
  return Status::Ok();
}

}  // namespace recops::ops::recompute_w_u_fwd_ns
