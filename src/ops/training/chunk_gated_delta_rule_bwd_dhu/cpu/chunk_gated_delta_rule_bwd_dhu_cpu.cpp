// training/chunk_gated_delta_rule_bwd_dhu/cpu/chunk_gated_delta_rule_bwd_dhu_cpu.cpp: the
// optimized CPU path. Work items are (sequence n, value head hv) (GVA: key head hv / (HV / H)),
// each owning its running state gradient dS [K, V] in S = fp32 (fp64 for fp64 q). Per chunk, from
// the last to the first:
//   dh[c] = dS (rounded to dh's dtype);
//   dv2_t = dv_local_t + exp(G_L − G_t) · Σ_i k_t[i] · dS[i, :]      (row axpys over V)
//   dS    = exp(G_L) · diag(exp(Gk_L)) · dS + Σ_t (scale · exp(G_t) · q_t) ⊗ do_t − Σ_t w_t ⊗ dv2_t
// (rank-1 rows; the diag factor only with gk, KDA's per-channel gate read at the chunk's last
// row: dS row i scales by exp(G_L) · exp(Gk_L[i])) and dh0 = dS after the first chunk. The dv2 rows
// that update dS are the unrounded S values. Only exponentials of G_L, G_t and the non-positive G_L
// − G_t are formed (§4.2 Numerics). Items are split statically over threads, each output element
// written by one item, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_gated_delta_rule_bwd_dhu/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {
namespace {

// dst[0, n) = the n elements of a floating tensor (dtype t) from element `at`, as S.
template <class S>
void widen(const void* base, DType t, int64_t at, int64_t n, S* dst) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    const X* s = static_cast<const X*>(base) + at;
    if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>) {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(s[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(s[i]));
    }
  });
}

// The n values src[0, n) into a floating tensor (dtype t) from element `at`, one rounding each.
template <class S>
void narrow(const S* src, int64_t n, void* base, DType t, int64_t at) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    X* d = static_cast<X*>(base) + at;
    if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>) {
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<X>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = from_double<X>(static_cast<double>(src[i]));
    }
  });
}

template <class S>
S gate_exp(S x, bool log2) {
  return log2 ? std::exp2(x) : std::exp(x);
}

// One sequence's chunks: [begin, end) in the chunk list.
struct SeqChunks {
  int64_t begin, end;
};

template <class S>
void bwd_dhu(const Params& p, const std::vector<training::TimeChunk>& chunks,
             const std::vector<SeqChunks>& seqs, int threads) {
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const S scale = static_cast<S>(p.scale);
  core::parallel_for(p.N * HV, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> ds(static_cast<size_t>(K * V)), kb(static_cast<size_t>(BT * K));
    std::vector<S> qb(static_cast<size_t>(BT * K)), wb(static_cast<size_t>(BT * K));
    std::vector<S> dob(static_cast<size_t>(BT * V)), dv2(static_cast<size_t>(BT * V));
    std::vector<S> gt(static_cast<size_t>(BT)), rdecay(static_cast<size_t>(K));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / HV, hv = item % HV, h = hv / group;
      if (p.dht)
        widen(p.dht, p.dht_dtype, (n * HV + hv) * K * V, K * V, ds.data());
      else
        std::fill(ds.begin(), ds.end(), S(0));
      const SeqChunks& sq = seqs[static_cast<size_t>(n)];
      for (int64_t ci = sq.end - 1; ci >= sq.begin; --ci) {
        const training::TimeChunk& ch = chunks[static_cast<size_t>(ci)];
        const int64_t R = ch.rows;
        narrow(ds.data(), K * V, p.dh, p.dh_dtype, (ch.index * HV + hv) * K * V);
        for (int64_t t = 0; t < R; ++t) {
          const int64_t r = ch.row0 + t;
          widen(p.k, p.k_dtype, (r * H + h) * K, K, kb.data() + t * K);
          widen(p.q, p.q_dtype, (r * H + h) * K, K, qb.data() + t * K);
          widen(p.w, p.w_dtype, (r * HV + hv) * K, K, wb.data() + t * K);
          widen(p.do_, p.do_dtype, (r * HV + hv) * V, V, dob.data() + t * V);
          widen(p.dv, p.dv_dtype, (r * HV + hv) * V, V, dv2.data() + t * V);
          if (p.g) widen(p.g, p.g_dtype, r * HV + hv, 1, gt.data() + t);
        }
        const S gL = p.g ? gt[static_cast<size_t>(R - 1)] : S(0);
        // dv2_t = dv_local_t + exp(G_L − G_t) · dSᵀ k_t; rows of dv2 start as dv_local. Four rows
        // at a time, so each dS row is loaded once per four output rows.
        for (int64_t t0 = 0; t0 < R; t0 += 4) {
          const int64_t nr = std::min<int64_t>(4, R - t0);
          S f[4] = {0, 0, 0, 0};
          for (int64_t r = 0; r < nr; ++r)
            f[r] = p.g ? gate_exp(gL - gt[static_cast<size_t>(t0 + r)], p.gate_log2) : S(1);
          S* d0 = dv2.data() + t0 * V;
          for (int64_t i = 0; i < K; ++i) {
            const S* row = ds.data() + i * V;
            S x[4] = {0, 0, 0, 0};
            for (int64_t r = 0; r < nr; ++r)
              x[r] = f[r] * kb[static_cast<size_t>((t0 + r) * K + i)];
            if (nr == 4) {
              S *a0 = d0, *a1 = d0 + V, *a2 = d0 + 2 * V, *a3 = d0 + 3 * V;
              for (int64_t v = 0; v < V; ++v) {
                const S y = row[v];
                a0[v] += x[0] * y, a1[v] += x[1] * y, a2[v] += x[2] * y, a3[v] += x[3] * y;
              }
            } else {
              for (int64_t r = 0; r < nr; ++r)
                for (int64_t v = 0; v < V; ++v) d0[r * V + v] += x[r] * row[v];
            }
          }
          for (int64_t r = 0; r < nr; ++r)
            narrow(d0 + r * V, V, p.dv2, p.dv2_dtype, ((ch.row0 + t0 + r) * HV + hv) * V);
        }
        // dS = exp(G_L)·dS + Σ_t (scale·exp(G_t)·q_t) ⊗ do_t − Σ_t w_t ⊗ dv2_t, one dS row at a
        // time (the row stays in cache while the chunk's do and dv2 rows stream by).
        for (int64_t t = 0; t < R; ++t) {
          const S e = p.g ? scale * gate_exp(gt[static_cast<size_t>(t)], p.gate_log2) : scale;
          for (int64_t i = 0; i < K; ++i) qb[static_cast<size_t>(t * K + i)] *= e;
        }
        const S decay = p.g ? gate_exp(gL, p.gate_log2) : S(1);
        const bool decays = p.g || p.gk;
        if (p.gk) {
          // Row i's decay exp(G_L) · exp(Gk_L[i]), Gk_L the chunk's last row of gk.
          widen(p.gk, p.gk_dtype, ((ch.row0 + R - 1) * HV + hv) * K, K, rdecay.data());
          for (int64_t i = 0; i < K; ++i)
            rdecay[static_cast<size_t>(i)] =
                decay * gate_exp(rdecay[static_cast<size_t>(i)], p.gate_log2);
        }
        for (int64_t i = 0; i < K; ++i) {
          S* row = ds.data() + i * V;
          const S rd = p.gk ? rdecay[static_cast<size_t>(i)] : decay;
          if (decays)
            for (int64_t v = 0; v < V; ++v) row[v] *= rd;
          for (int64_t t = 0; t < R; ++t) {
            const S a = qb[static_cast<size_t>(t * K + i)], c = wb[static_cast<size_t>(t * K + i)];
            const S* dot = dob.data() + t * V;
            const S* d2 = dv2.data() + t * V;
            for (int64_t v = 0; v < V; ++v) row[v] += a * dot[v] - c * d2[v];
          }
        }
      }
      if (p.dh0) {
        float* d0 = static_cast<float*>(p.dh0) + (n * HV + hv) * K * V;
        for (int64_t e = 0; e < K * V; ++e) d0[e] = static_cast<float>(ds[static_cast<size_t>(e)]);
      }
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  // The chunk list in fla's order (dh's numbering) and each sequence's slice of it.
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  std::vector<SeqChunks> seqs(static_cast<size_t>(p.N));
  int64_t at = 0;
  for (int64_t n = 0; n < p.N; ++n) {
    int64_t len = p.T;
    if (p.seq_offsets)
      len = p.off_dtype == DType::int32
                ? static_cast<int64_t>(static_cast<const int32_t*>(p.seq_offsets)[n + 1]) -
                      static_cast<const int32_t*>(p.seq_offsets)[n]
                : static_cast<const int64_t*>(p.seq_offsets)[n + 1] -
                      static_cast<const int64_t*>(p.seq_offsets)[n];
    const int64_t count = (len + p.BT - 1) / p.BT;
    seqs[static_cast<size_t>(n)] = {at, at + count};
    at += count;
  }
  // Spare chunks of the sync-free bound (with offsets; none without): 0.
  const int64_t per = p.HV * p.K * p.V;
  const int64_t owned = static_cast<int64_t>(chunks.size());
  if (p.B * p.NT > owned) {
    const std::vector<float> zeros(static_cast<size_t>(per), 0.0f);
    for (int64_t c = owned; c < p.B * p.NT; ++c)
      narrow(zeros.data(), per, p.dh, p.dh_dtype, c * per);
  }
  if (p.HV == 0) return Status::Ok();
  if (p.q_dtype == DType::fp64)
    bwd_dhu<double>(p, chunks, seqs, ctx.num_threads);
  else
    bwd_dhu<float>(p, chunks, seqs, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
