// training/chunk_gated_delta_rule_fwd_h/reference.cpp: the golden (accuracy.md): training_ops.md
// §4.3's chunk recurrence in fp64, one sequence and value head at a time, element by element:
//   h[c][i][j] = S[i][j];  v_new[t][j] = u[t][j] − Σ_i w[t][i]·S[i][j]
//   S'[i][j] = exp(G_L)·S[i][j] + Σ_{t in c} exp(G_L − G_t)·k[t][i]·v_new[t][j]
// with G_L the gate at the chunk's last real position and the exponential of the difference formed
// as written; with gk (KDA's per-channel gate cumsum [B, T, HV, K]) the kept state's row i is also
// multiplied by exp(gk_L[i]):
//   S'[i][j] = exp(gk_L[i])·exp(G_L)·S[i][j] + Σ_{t in c} exp(G_L − G_t)·k[t][i]·v_new[t][j]
// (either factor 1 when its gate is absent); final_state = S after the sequence's last chunk
// (initial_state, or 0, for a zero-length sequence). h's chunks past the sequences' count are 0.
// Each output rounded once. With p.plain, the double standard's plain baseline: the same loops with
// S = fp32 (fp64 for fp64 k), h stored in its dtype and read back from there for w·S, and v_new
// stored in its dtype and read back from there for the state update, as a framework composition
// (and fla's kernel, which casts h to w's dtype and v_new to k's) rounds them. Includes params.h
// and core only; shares no code with cpu/. Its element access is the goldens' own
// common/gdn_golden.h, which no cpu/ code includes.
#include <cmath>
#include <vector>

#include "ops/training/chunk_gated_delta_rule_fwd_h/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::store;

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
void golden(const Params& p) {
  const int64_t group = p.HV / p.H, KV = p.K * p.V;
  std::vector<S> state(static_cast<size_t>(KV)), used(static_cast<size_t>(KV));
  std::vector<S> vn(static_cast<size_t>(p.BT * p.V));
  int64_t chunk_base = 0;  // with offsets: the index in h of sequence n's first chunk
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    const int64_t n_chunks = (last - first + p.BT - 1) / p.BT;
    for (int64_t hv = 0; hv < p.HV; ++hv) {
      const int64_t kh = hv / group;
      for (int64_t e = 0; e < KV; ++e)
        state[e] = p.h0 ? static_cast<S>(load(p.h0, p.h0_dtype, (n * p.HV + hv) * KV + e)) : S(0);
      for (int64_t ci = 0; ci < n_chunks; ++ci) {
        const int64_t c0 = first + ci * p.BT;
        const int64_t c1 = c0 + p.BT < last ? c0 + p.BT : last;
        const int64_t hc = p.seq_offsets ? chunk_base + ci : ci;
        const int64_t h_at = ((b * p.NT + hc) * p.HV + hv) * KV;
        for (int64_t e = 0; e < KV; ++e) {
          const double kept = store(p.h, p.h_dtype, h_at + e, static_cast<double>(state[e]));
          used[e] = p.plain ? static_cast<S>(kept) : state[e];
        }
        for (int64_t t = c0; t < c1; ++t) {
          const int64_t row = b * p.T + t;
          for (int64_t j = 0; j < p.V; ++j) {
            S ws = 0;
            for (int64_t i = 0; i < p.K; ++i)
              ws += static_cast<S>(load(p.w, p.w_dtype, (row * p.HV + hv) * p.K + i)) *
                    used[i * p.V + j];
            const S x = static_cast<S>(load(p.u, p.u_dtype, (row * p.HV + hv) * p.V + j)) - ws;
            const double kept =
                store(p.v_new, p.u_dtype, (row * p.HV + hv) * p.V + j, static_cast<double>(x));
            vn[(t - c0) * p.V + j] = p.plain ? static_cast<S>(kept) : x;
          }
        }
        S g_last = 0;
        if (p.g) g_last = static_cast<S>(load(p.g, p.g_dtype, (b * p.T + c1 - 1) * p.HV + hv));
        const S decay = !p.g ? S(1) : p.gate_log2 ? std::exp2(g_last) : std::exp(g_last);
        const int64_t last_row = b * p.T + c1 - 1;
        for (int64_t i = 0; i < p.K; ++i) {
          S row_decay = 1;  // exp(gk_L[i])
          if (p.gk) {
            const S x = static_cast<S>(load(p.gk, p.gk_dtype, (last_row * p.HV + hv) * p.K + i));
            row_decay = p.gate_log2 ? std::exp2(x) : std::exp(x);
          }
          for (int64_t j = 0; j < p.V; ++j) {
            S add = 0;
            for (int64_t t = c0; t < c1; ++t) {
              const int64_t row = b * p.T + t;
              S f = 1;
              if (p.g) {
                const S d = g_last - static_cast<S>(load(p.g, p.g_dtype, row * p.HV + hv));
                f = p.gate_log2 ? std::exp2(d) : std::exp(d);
              }
              add += f * static_cast<S>(load(p.k, p.k_dtype, (row * p.H + kh) * p.K + i)) *
                     vn[(t - c0) * p.V + j];
            }
            state[i * p.V + j] = row_decay * decay * state[i * p.V + j] + add;
          }
        }
      }
      if (p.ht)
        for (int64_t e = 0; e < KV; ++e)
          store(p.ht, DType::fp32, (n * p.HV + hv) * KV + e, static_cast<double>(state[e]));
    }
    if (p.seq_offsets) chunk_base += n_chunks;
  }
  // With offsets, h's chunks past the sequences' (NT is a bound) are zero.
  if (p.seq_offsets)
    for (int64_t e = chunk_base * p.HV * KV; e < p.NT * p.HV * KV; ++e) store(p.h, p.h_dtype, e, 0);
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.k_dtype != DType::fp64)
    golden<float>(p);
  else
    golden<double>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
