// training/chunk_kda_bwd_intra/cpu/chunk_kda_bwd_intra_cpu.cpp: the optimized CPU path. Work items
// are (chunk, key head h), split statically over the threads; each output element comes from one
// item, so results do not depend on the thread count. Per item the chunk's q, k rows (key head h)
// are widened once and the group sums of dq, dk start from the incoming values (fp64); per value
// head hv of the group, in order, G, β and the lower parts of dAqk, dAkk are widened and the
// chunk is cut into 16-row sub-blocks (training_ops.md §4.5). For a row block I starting at row r
// and the columns j < r of the earlier blocks, exp(G_i − G_j) = exp(G_i − G_r)·exp(G_r − G_j),
// both exponents ≤ 0 for decaying gates: with ρ_i = exp(G_i − G_r), κ_j = exp(G_r − G_j),
//   dq_i  += ρ_i ⊙ Σ_j dAqk_ij (k_j ⊙ κ_j),   dkl_i += ρ_i ⊙ Σ_j dAkk_ij (k_j ⊙ κ_j)
//   dkr_j += κ_j ⊙ Σ_{i ∈ I} (dAqk_ij q_i + dAkk_ij β_i k_i) ⊙ ρ_i
// (row axpys along K, vectorisable); inside a diagonal sub-block exp(G_i − G_j), j ≤ i, is formed
// per pair, as chunk_kda_fwd_intra's CPU path does. Then dβ_i = k_i · dkl_i, dk = β dkl + dkr,
// dG = q ⊙ dq + k ⊙ (β dkl − dkr) (natural-log units), dq and dk added to the group sums.
// Arithmetic: fp32 (fp64 when q is fp64); the group sums in fp64, each output rounded once.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_kda_bwd_intra/impls.h"
#include "ops/training/common/gdn_cpu.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_intra_ns {
namespace {
using training::gdn_cpu::load_as;

constexpr int64_t kSub = 16;  // sub-block rows (fla's BC)

// The per-thread scratch of one item.
template <class S>
struct Scratch {
  std::vector<S> q, k, g, beta, a, m, dq, dkl, dkr, rho, kk, zq, zk, acc, acc2;
  std::vector<double> dqs, dks;
  Scratch(int64_t BT, int64_t K) {
    const auto n = [](int64_t x) { return static_cast<size_t>(x); };
    for (auto* b : {&q, &k, &g, &dq, &dkl, &dkr, &rho, &kk, &zq, &zk}) b->resize(n(BT * K));
    for (auto* b : {&a, &m}) b->resize(n(BT * BT));
    beta.resize(n(BT));
    acc.resize(n(K));
    acc2.resize(n(K));
    dqs.resize(n(BT * K));
    dks.resize(n(BT * K));
  }
};

template <class S>
void value_head(const Params& p, const training::TimeChunk& ch, int64_t hv, Scratch<S>& s) {
  const int64_t HV = p.HV, K = p.K, BT = p.BT, R = ch.rows;
  const bool log2 = p.gate_log2;
  auto e = [log2](S x) { return log2 ? std::exp2(x) : std::exp(x); };
  for (int64_t i = 0; i < R; ++i) {
    const int64_t r = ch.row0 + i;
    for (int64_t d = 0; d < K; ++d)
      s.g[i * K + d] = load_as<S>(p.g, p.g_dtype, (r * HV + hv) * K + d);
    s.beta[i] = load_as<S>(p.beta, p.beta_dtype, r * HV + hv);
    const int64_t oa = (r * HV + hv) * BT;
    for (int64_t j = 0; j <= i; ++j) {
      s.a[i * BT + j] = load_as<S>(p.dAqk, p.dAqk_dtype, oa + j);
      s.m[i * BT + j] = j < i ? load_as<S>(p.dAkk, p.dAkk_dtype, oa + j) : S(0);
    }
  }
  std::fill(s.dq.begin(), s.dq.begin() + R * K, S(0));
  std::fill(s.dkl.begin(), s.dkl.begin() + R * K, S(0));
  std::fill(s.dkr.begin(), s.dkr.begin() + R * K, S(0));
  for (int64_t r0 = 0; r0 < R; r0 += kSub) {
    const int64_t r1 = std::min(R, r0 + kSub);
    // Diagonal sub-block: exp(G_i − G_j), j ≤ i, per pair.
    for (int64_t i = r0; i < r1; ++i) {
      const S* qi = s.q.data() + i * K;
      const S* ki = s.k.data() + i * K;
      const S* gi = s.g.data() + i * K;
      S* dqi = s.dq.data() + i * K;
      S* dkli = s.dkl.data() + i * K;
      const S bi = s.beta[i];
      for (int64_t j = r0; j <= i; ++j) {
        const S a = s.a[i * BT + j], m = s.m[i * BT + j], mb = m * bi;
        const S* kj = s.k.data() + j * K;
        const S* gj = s.g.data() + j * K;
        S* dkrj = s.dkr.data() + j * K;
        for (int64_t d = 0; d < K; ++d) {
          const S gam = e(gi[d] - gj[d]);
          dqi[d] += a * kj[d] * gam;
          dkli[d] += m * kj[d] * gam;
          dkrj[d] += (a * qi[d] + mb * ki[d]) * gam;
        }
      }
    }
    if (r0 == 0) continue;
    // Earlier columns j < r0: rows by ρ_i = exp(G_i − G_r0), columns by κ_j = exp(G_r0 − G_j).
    const S* gr = s.g.data() + r0 * K;
    for (int64_t i = r0; i < r1; ++i)
      for (int64_t d = 0; d < K; ++d) {
        const S rho = e(s.g[i * K + d] - gr[d]);
        s.rho[i * K + d] = rho;
        s.zq[i * K + d] = s.q[i * K + d] * rho;
        s.zk[i * K + d] = s.beta[i] * s.k[i * K + d] * rho;
      }
    for (int64_t j = 0; j < r0; ++j)
      for (int64_t d = 0; d < K; ++d) s.kk[j * K + d] = e(gr[d] - s.g[j * K + d]);  // κ_j
    // Row side: dq_i, dkl_i += ρ_i ⊙ Σ_j (dAqk_ij, dAkk_ij)·k_j ⊙ κ_j.
    for (int64_t i = r0; i < r1; ++i) {
      S* __restrict aq = s.acc.data();
      S* __restrict am = s.acc2.data();
      std::fill(aq, aq + K, S(0));
      std::fill(am, am + K, S(0));
      for (int64_t j = 0; j < r0; ++j) {
        const S a = s.a[i * BT + j], m = s.m[i * BT + j];
        const S* __restrict kj = s.k.data() + j * K;
        const S* __restrict kap = s.kk.data() + j * K;
        for (int64_t d = 0; d < K; ++d) {
          const S x = kj[d] * kap[d];
          aq[d] += a * x;
          am[d] += m * x;
        }
      }
      const S* rho = s.rho.data() + i * K;
      for (int64_t d = 0; d < K; ++d) {
        s.dq[i * K + d] += rho[d] * aq[d];
        s.dkl[i * K + d] += rho[d] * am[d];
      }
    }
    // Column side: dkr_j += κ_j ⊙ Σ_{i ∈ I} (dAqk_ij q_i + dAkk_ij β_i k_i) ⊙ ρ_i.
    for (int64_t j = 0; j < r0; ++j) {
      S* __restrict acc = s.acc.data();
      std::fill(acc, acc + K, S(0));
      for (int64_t i = r0; i < r1; ++i) {
        const S a = s.a[i * BT + j], m = s.m[i * BT + j];
        const S* __restrict zq = s.zq.data() + i * K;
        const S* __restrict zk = s.zk.data() + i * K;
        for (int64_t d = 0; d < K; ++d) acc[d] += a * zq[d] + m * zk[d];
      }
      const S* kap = s.kk.data() + j * K;
      for (int64_t d = 0; d < K; ++d) s.dkr[j * K + d] += kap[d] * acc[d];
    }
  }
  for (int64_t i = 0; i < R; ++i) {
    const int64_t r = ch.row0 + i, ob = r * HV + hv;
    S db = 0;
    for (int64_t d = 0; d < K; ++d) db += s.k[i * K + d] * s.dkl[i * K + d];
    p.dbeta[ob] = static_cast<float>(load_as<S>(p.dbeta_in, p.dbeta_dtype, ob) + db);
    for (int64_t d = 0; d < K; ++d) {
      const S x = s.dq[i * K + d], l = s.beta[i] * s.dkl[i * K + d], rr = s.dkr[i * K + d];
      const int64_t og = ob * K + d;
      p.dg[og] = static_cast<float>(load_as<S>(p.dg_in, p.dg_dtype, og) + s.q[i * K + d] * x +
                                    s.k[i * K + d] * (l - rr));
      s.dqs[i * K + d] += static_cast<double>(x);
      s.dks[i * K + d] += static_cast<double>(l + rr);
    }
  }
}

template <class S>
void item(const Params& p, const training::TimeChunk& ch, int64_t h, Scratch<S>& s) {
  const int64_t K = p.K, R = ch.rows;
  const int64_t group = p.HV / p.H;
  for (int64_t i = 0; i < R; ++i) {
    const int64_t o = ((ch.row0 + i) * p.H + h) * K;
    for (int64_t d = 0; d < K; ++d) {
      s.q[i * K + d] = load_as<S>(p.q, p.q_dtype, o + d);
      s.k[i * K + d] = load_as<S>(p.k, p.k_dtype, o + d);
      s.dqs[i * K + d] = load_as<double>(p.dq_in, p.dq_dtype, o + d);
      s.dks[i * K + d] = load_as<double>(p.dk_in, p.dk_dtype, o + d);
    }
  }
  for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) value_head<S>(p, ch, hv, s);
  for (int64_t i = 0; i < R; ++i) {
    const int64_t o = ((ch.row0 + i) * p.H + h) * K;
    for (int64_t d = 0; d < K; ++d) {
      p.dq[o + d] = static_cast<float>(s.dqs[i * K + d]);
      p.dk[o + d] = static_cast<float>(s.dks[i * K + d]);
    }
  }
}

template <class S>
void apply(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const int64_t items = static_cast<int64_t>(chunks.size()) * p.H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Scratch<S> s(p.BT, p.K);
    for (int64_t it = begin; it < end; ++it)
      item<S>(p, chunks[static_cast<size_t>(it / p.H)], it % p.H, s);
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (p.H == 0) return Status::Ok();
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  if (p.q_dtype == DType::fp64)
    apply<double>(p, chunks, ctx.num_threads);
  else
    apply<float>(p, chunks, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_intra_ns
