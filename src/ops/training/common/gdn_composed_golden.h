// training/common/gdn_composed_golden.h: the golden (accuracy.md) of the composed Gated DeltaNet op
// (chunk_gated_delta_rule, training_ops.md §4.2: g [B, T, HV], one decay per token and value head)
// and of the composed Kimi Delta Attention op (chunk_kda, §4.5: g [B, T, HV, K], the per-channel
// decay D_t = diag(exp(g_t)) on S's rows; GDN's is D_t = exp(g_t)·I): the token-by-token
// recurrence in fp64, unchunked, per sequence and value head hv (key head h = hv / (HV / H)), with
// S [K, V] = initial_state (or 0):
//   S ← D_t·S;  S ← S + β_t·k_t ⊗ (v_t − Sᵀk_t);  o_t = scale·Sᵀq_t;  final_state = S_last
// With l2norm, q_t and k_t are first scaled by 1/sqrt(Σ x² + eps) (§3.5), in fp64 and unrounded.
// Each output is rounded to its dtype once.
// The backward (p.bwd) is reverse mode through the same recurrence, by hand: with the decayed state
// Sa_t = D_t·S_{t−1}, r_t = v_t − Sa_tᵀk_t, S_t = Sa_t + β_t·k_t ⊗ r_t and dS = dht (or 0), for t
// from the last token to the first:
//   dq_t = scale·S_t do_t;  dS += scale·q_t ⊗ do_t;  dβ_t = k_tᵀ dS r_t;  dr = β_t·dSᵀk_t
//   dk_t = β_t·dS r_t − Sa_t dr;  dv_t = dr;  dSa = dS − k_t ⊗ dr
//   dg_t[i] = Σ_j dSa[i, j]·Sa_t[i, j] (KDA), dg_t = ⟨dSa, Sa_t⟩ (GDN);  dS = D_t·dSa
// dh0 = the final dS. dq, dk are summed over each key head's value heads; with l2norm they go
// through y = x/sqrt(Σx² + eps)'s backward dx = (dy − y (dy·y))/sqrt(Σx² + eps).
// P is the op's Params (a training::ComposedParams). Included by the two ops' reference.cpp only;
// uses gdn_golden.h's element access and l2 normalisation and shares no code with cpu/ or cuda/
// (which compose the chunked sub-ops), and no recurrence with the sub-ops' goldens.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/training/common/gdn_golden.h"
#include "recops/status.h"

namespace recops::ops::training::golden {

// The gate of one (token row, value head) at flat index rh: K values (per channel) or g's one
// value repeated K times.
template <class P>
void read_gate(const P& p, bool per_channel, int64_t rh, std::vector<double>& gk) {
  if (per_channel) {
    read_n(p.g, p.g_dtype, rh * p.K, p.K, gk.data());
    return;
  }
  double g = 0;
  read_n(p.g, p.g_dtype, rh, 1, &g);
  std::fill(gk.begin(), gk.end(), g);
}

template <class P>
Status composed_bwd(const P& p, bool per_channel) {
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, T = p.T;
  const int64_t group = H > 0 ? HV / H : 1;
  const size_t KV = static_cast<size_t>(K * V);
  const int64_t rows = p.B * T;
  // fp64 accumulators of dq, dk per key head (before l2norm's backward), and dv, dg, dbeta.
  std::vector<double> dq(static_cast<size_t>(rows * H * K)), dk(dq.size()),
      dv(static_cast<size_t>(rows * HV * V)),
      dg(static_cast<size_t>(rows * HV * (per_channel ? K : 1))),
      db(static_cast<size_t>(rows * HV));
  std::vector<double> q(static_cast<size_t>(K)), k(static_cast<size_t>(K)),
      v(static_cast<size_t>(V)), d_o(static_cast<size_t>(V)), dS(KV), dSa(KV),
      r(static_cast<size_t>(V)), dr(static_cast<size_t>(V)), dSr(static_cast<size_t>(K)),
      gk(static_cast<size_t>(K));
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : n * T;
    const int64_t last =
        p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : (n + 1) * T;
    const int64_t L = last - first;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t h = hv / group;
      const int64_t state_at = (n * HV + hv) * K * V;
      // Forward, keeping Sa_t, S_t (states[2t], states[2t + 1]) and r_t per token.
      std::vector<double> states(static_cast<size_t>(2 * L + 1) * KV),
          rs(static_cast<size_t>(L * V));
      double* S0 = states.data() + 2 * L * KV;  // the initial state, kept last
      if (p.h0)
        read_n(p.h0, p.h0_dtype, state_at, K * V, S0);
      else
        std::fill(S0, S0 + KV, 0.0);
      auto load_qk = [&](int64_t row) {
        read_n(p.q, p.q_dtype, (row * H + h) * K, K, q.data());
        read_n(p.k, p.k_dtype, (row * H + h) * K, K, k.data());
        if (p.l2norm) {
          l2_normalize(q, p.l2norm_eps);
          l2_normalize(k, p.l2norm_eps);
        }
      };
      const double* prev = S0;
      for (int64_t t = 0; t < L; ++t) {
        const int64_t row = first + t;
        load_qk(row);
        read_n(p.v, p.v_dtype, (row * HV + hv) * V, V, v.data());
        double beta = 0;
        read_gate(p, per_channel, row * HV + hv, gk);
        read_n(p.beta, p.beta_dtype, row * HV + hv, 1, &beta);
        double* Sa = states.data() + 2 * t * KV;
        double* St = Sa + KV;
        for (int64_t i = 0; i < K; ++i) {
          const double decay = std::exp(gk[i]);
          for (int64_t j = 0; j < V; ++j) Sa[i * V + j] = decay * prev[i * V + j];
        }
        double* rt = rs.data() + t * V;
        for (int64_t j = 0; j < V; ++j) {
          double kv = 0;
          for (int64_t i = 0; i < K; ++i) kv += Sa[i * V + j] * k[i];
          rt[j] = v[j] - kv;
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) St[i * V + j] = Sa[i * V + j] + beta * k[i] * rt[j];
        prev = St;
      }
      // Reverse.
      if (p.dht)
        read_n(p.dht, p.dht_dtype, state_at, K * V, dS.data());
      else
        std::fill(dS.begin(), dS.end(), 0.0);
      for (int64_t t = L - 1; t >= 0; --t) {
        const int64_t row = first + t;
        load_qk(row);
        read_n(p.d_o, p.v_dtype, (row * HV + hv) * V, V, d_o.data());
        double beta = 0;
        read_gate(p, per_channel, row * HV + hv, gk);
        read_n(p.beta, p.beta_dtype, row * HV + hv, 1, &beta);
        const double* Sa = states.data() + 2 * t * KV;
        const double* St = Sa + KV;
        const double* rt = rs.data() + t * V;
        double* dqr = dq.data() + (row * H + h) * K;
        double* dkr = dk.data() + (row * H + h) * K;
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) acc += St[i * V + j] * d_o[j];
          dqr[i] += p.scale * acc;
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) dS[i * V + j] += p.scale * q[i] * d_o[j];
        // dSr = dS r_t; dβ = k·dSr; dr = β dSᵀk.
        double dbeta = 0;
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) acc += dS[i * V + j] * rt[j];
          dSr[i] = acc;
          dbeta += k[i] * acc;
        }
        for (int64_t j = 0; j < V; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < K; ++i) acc += dS[i * V + j] * k[i];
          dr[j] = beta * acc;
        }
        for (int64_t i = 0; i < K; ++i) {
          double acc = 0;
          for (int64_t j = 0; j < V; ++j) acc += Sa[i * V + j] * dr[j];
          dkr[i] += beta * dSr[i] - acc;
        }
        // dg: per channel one sum over j per row i of dSa ⊙ Sa_t; else one sum over i and j.
        double dgt = 0;
        for (int64_t i = 0; i < K; ++i) {
          if (per_channel) dgt = 0;
          for (int64_t j = 0; j < V; ++j) {
            const double d = dS[i * V + j] - k[i] * dr[j];
            dSa[i * V + j] = d;
            dgt += d * Sa[i * V + j];
          }
          if (per_channel) dg[(row * HV + hv) * K + i] = dgt;
          const double decay = std::exp(gk[i]);
          for (int64_t j = 0; j < V; ++j) dS[i * V + j] = decay * dSa[i * V + j];
        }
        if (!per_channel) dg[row * HV + hv] = dgt;
        for (int64_t j = 0; j < V; ++j) dv[(row * HV + hv) * V + j] = dr[j];
        db[row * HV + hv] = dbeta;
      }
      if (p.dh0) write_n(p.dh0, DType::fp32, state_at, K * V, dS.data());
    }
  }
  // l2norm's backward per row of q and k: dx = r (dy − y (dy·y)), y = x r.
  if (p.l2norm) {
    for (int64_t e = 0; e < rows * H; ++e) {
      for (int which = 0; which < 2; ++which) {
        std::vector<double>& x = which == 0 ? q : k;
        read_n(which == 0 ? p.q : p.k, which == 0 ? p.q_dtype : p.k_dtype, e * K, K, x.data());
        const double rf = l2_norm_factor(x, p.l2norm_eps);
        double* dy = (which == 0 ? dq : dk).data() + e * K;
        double dot = 0;
        for (int64_t i = 0; i < K; ++i) dot += dy[i] * x[i] * rf;
        for (int64_t i = 0; i < K; ++i) dy[i] = rf * (dy[i] - x[i] * rf * dot);
      }
    }
  }
  write_n(p.dq, p.q_dtype, 0, rows * H * K, dq.data());
  write_n(p.dk, p.k_dtype, 0, rows * H * K, dk.data());
  write_n(p.dv, p.v_dtype, 0, rows * HV * V, dv.data());
  write_n(p.dg, p.g_dtype, 0, static_cast<int64_t>(dg.size()), dg.data());
  write_n(p.dbeta, p.beta_dtype, 0, rows * HV, db.data());
  return Status::Ok();
}

// The forward (and, with p.bwd, the backward) of either op.
template <class P>
Status composed(const P& p, bool per_channel) {
  if (p.bwd) return composed_bwd(p, per_channel);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, T = p.T;
  const int64_t group = H > 0 ? HV / H : 1;
  std::vector<double> S(static_cast<size_t>(K * V)), q(static_cast<size_t>(K)),
      k(static_cast<size_t>(K)), v(static_cast<size_t>(V)), kv(static_cast<size_t>(V)),
      o(static_cast<size_t>(V)), gk(static_cast<size_t>(K));
  for (int64_t n = 0; n < p.N; ++n) {
    // Flattened rows [first, last) of sequence n.
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : n * T;
    const int64_t last =
        p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : (n + 1) * T;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t h = hv / group;
      const int64_t state_at = (n * HV + hv) * K * V;
      if (p.h0)
        read_n(p.h0, p.h0_dtype, state_at, K * V, S.data());
      else
        std::fill(S.begin(), S.end(), 0.0);
      for (int64_t r = first; r < last; ++r) {
        read_n(p.q, p.q_dtype, (r * H + h) * K, K, q.data());
        read_n(p.k, p.k_dtype, (r * H + h) * K, K, k.data());
        read_n(p.v, p.v_dtype, (r * HV + hv) * V, V, v.data());
        double beta = 0;
        read_gate(p, per_channel, r * HV + hv, gk);
        read_n(p.beta, p.beta_dtype, r * HV + hv, 1, &beta);
        if (p.l2norm) {
          l2_normalize(q, p.l2norm_eps);
          l2_normalize(k, p.l2norm_eps);
        }
        for (int64_t i = 0; i < K; ++i) {
          const double decay = std::exp(gk[i]);
          for (int64_t j = 0; j < V; ++j) S[i * V + j] *= decay;
        }
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
        write_n(p.o, p.o_dtype, (r * HV + hv) * V, V, o.data());
      }
      if (p.ht) write_n(p.ht, DType::fp32, state_at, K * V, S.data());
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops::training::golden
