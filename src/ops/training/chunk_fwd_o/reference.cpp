// training/chunk_fwd_o/reference.cpp: the golden (accuracy.md): training_ops.md §4.3's formula
// in fp64, one output element at a time:
//   o[t, hv, v] = scale · exp(G_t) · Σ_c h[chunk(t), hv, c, v] · q[t, h, c]
//               + scale · Σ_{c0 ≤ j ≤ t} exp(G_t − G_j) · (Σ_c q[t, h, c] · k[j, h, c]) · v_new[j,
//               hv, v]
// with the exponentials formed of G_t and of the difference G_t − G_j as written, rounded once to
// o's dtype. The dot q_t·k_j is summed afresh for each (t, j, hv) and kept for the V columns.
// With p.plain, the double standard's plain baseline: the same loops with S = fp32 (fp64 for fp64
// q) for every sum, difference, exponential and product, and the chunk's attention matrix
// Γ_tj·(q_t·k_j) stored in v_new's dtype before it multiplies v_new, as a framework composition
// (and fla's kernel, which casts it to v's dtype for the second matmul) rounds it. Includes
// params.h and core only; shares no code with cpu/.
// With gk (KDA, per-channel G [B, T, HV, K]): the factors move inside the channel sums,
//   o[t, hv, v] = scale · Σ_c q[t, h, c] · exp(G_tc) · h[chunk(t), hv, c, v]
//               + scale · Σ_{c0 ≤ j ≤ t} (Σ_c q[t, h, c] · k[j, h, c] · exp(G_tc − G_jc)) ·
//               v_new[j, hv, v]
// each exponential formed of G_tc or of the difference G_tc − G_jc as written; the plain run also
// rounds q_tc·exp(G_tc) to q's dtype, as fla's chunk_gla_fwd_kernel_o does (b_qg.to(b_q.dtype)).
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <cmath>
#include <vector>

#include "ops/training/chunk_fwd_o/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_fwd_o_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::round_to;
using training::golden::store;

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H;
  int64_t chunk_base = 0;  // with offsets: the index in h of sequence n's first chunk
  std::vector<S> dots(static_cast<size_t>(p.BT));
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t t = first; t < last; ++t) {
      const int64_t ci = (t - first) / p.BT;                    // t's chunk within its sequence
      const int64_t c0 = first + ci * p.BT;                     // its first position
      const int64_t hc = p.seq_offsets ? chunk_base + ci : ci;  // its index in h's dim 1
      const int64_t rt = b * p.T + t;
      for (int64_t hv = 0; hv < p.HV; ++hv) {
        const int64_t h = hv / group;
        S gt = 0;
        if (p.g) gt = static_cast<S>(load(p.g, p.g_dtype, rt * p.HV + hv));
        for (int64_t s = c0; s <= t; ++s) {
          const int64_t rs = b * p.T + s;
          S dot = 0;
          for (int64_t c = 0; c < p.K; ++c) {
            S term = static_cast<S>(load(p.q, p.q_dtype, (rt * p.H + h) * p.K + c)) *
                     static_cast<S>(load(p.k, p.k_dtype, (rs * p.H + h) * p.K + c));
            if (p.gk) {  // KDA: exp(G_tc − G_sc), the difference as written
              const S d = static_cast<S>(load(p.gk, p.gk_dtype, (rt * p.HV + hv) * p.K + c)) -
                          static_cast<S>(load(p.gk, p.gk_dtype, (rs * p.HV + hv) * p.K + c));
              term *= p.gate_log2 ? std::exp2(d) : std::exp(d);
            }
            dot += term;
          }
          S gamma = 1;
          if (p.g) {
            const S d = gt - static_cast<S>(load(p.g, p.g_dtype, rs * p.HV + hv));
            gamma = p.gate_log2 ? std::exp2(d) : std::exp(d);
          }
          S a = gamma * dot;
          if (p.plain) a = static_cast<S>(round_to(p.v_dtype, static_cast<double>(a)));
          dots[static_cast<size_t>(s - c0)] = a;
        }
        const S decay = !p.g ? S(1) : p.gate_log2 ? std::exp2(gt) : std::exp(gt);
        const int64_t h_base = ((b * p.NT + hc) * p.HV + hv) * p.K * p.V;
        for (int64_t v = 0; v < p.V; ++v) {
          S inter = 0;
          for (int64_t c = 0; c < p.K; ++c) {
            S qc = static_cast<S>(load(p.q, p.q_dtype, (rt * p.H + h) * p.K + c));
            if (p.gk) {  // KDA: q_tc · exp(G_tc) (in q's dtype for the plain run, as fla's qg)
              const S gc = static_cast<S>(load(p.gk, p.gk_dtype, (rt * p.HV + hv) * p.K + c));
              qc *= p.gate_log2 ? std::exp2(gc) : std::exp(gc);
              if (p.plain) qc = static_cast<S>(round_to(p.q_dtype, static_cast<double>(qc)));
            }
            inter += static_cast<S>(load(p.h, p.h_dtype, h_base + c * p.V + v)) * qc;
          }
          S intra = 0;
          for (int64_t s = c0; s <= t; ++s)
            intra += dots[static_cast<size_t>(s - c0)] *
                     static_cast<S>(load(p.v, p.v_dtype, ((b * p.T + s) * p.HV + hv) * p.V + v));
          const S sc = static_cast<S>(p.scale);
          const S o = sc * decay * inter + sc * intra;
          store(p.o, p.o_dtype, (rt * p.HV + hv) * p.V + v, static_cast<double>(o));
        }
      }
    }
    if (p.seq_offsets) chunk_base += (last - first + p.BT - 1) / p.BT;
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.q_dtype != DType::fp64)
    golden<float>(p);
  else
    golden<double>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_fwd_o_ns
