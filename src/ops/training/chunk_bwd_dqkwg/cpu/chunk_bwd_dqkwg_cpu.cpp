// training/chunk_bwd_dqkwg/cpu/chunk_bwd_dqkwg_cpu.cpp: the optimized CPU path. Work items are
// (chunk, key head h), split statically over threads (core::parallel_for); each output element is
// written by one item, so results do not depend on the thread count. Per item the chunk's q and k
// rows at head h are widened once into zero-padded [rows, Kp] blocks; then for each value head hv
// of h's group (hv / (HV / H) = h), in head order, its v_new, do (and dv2) rows and its h_c, dh_c
// [K, V] are widened once into zero-padded blocks and
//   ds_ij = scale·exp(G_i − G_j)·(do_i·v_j)   (j ≤ i),
//   dq_i  = scale·exp(G_i)·h_c do_i + Σ_{j≤i} ds_ij k_j,
//   dk_j  = exp(G_L − G_j)·dh_c v_j + Σ_{i≥j} ds_ij q_i,
//   dw_t  = −h_c dv2_t,
//   dg_t  = q_t·dq_t − k_t·dk_t (+ at L: exp(G_L)·⟨dh_c, h_c⟩ + Σ_t k_t·(exp(G_L − G_t)·dh_c v_t))
// are formed with 8 independent partial sums per dot (vectorisable) and row axpys (dw's dots,
// one rounding from exact, with fp64 partial sums; see README "Dtypes and accuracy"); the value
// head's dq and dk are added to the item's fp32 group sums, rounded once at the end. Only
// exponentials of G_i and of non-positive differences are formed (training_ops.md §4.2).
// Arithmetic: fp32 (fp64 for fp64 q).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_bwd_dqkwg/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_bwd_dqkwg_ns {
namespace {

constexpr int kLanes = 8;  // partial sums per dot

int64_t padded(int64_t n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}

// dst[0, n) = the n elements of a floating tensor (dtype t) from element `at`, as S; then
// dst[n, np) = 0.
template <class S>
void widen(const void* base, DType t, int64_t at, int64_t n, int64_t np, S* dst) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    const X* s = static_cast<const X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>)
        dst[i] = static_cast<S>(s[i]);
      else
        dst[i] = static_cast<S>(to_float(s[i]));
    }
  });
  std::fill(dst + n, dst + np, S(0));
}

// The n elements of `src` rounded to dtype t at element `at`.
template <class S>
void narrow(const S* src, int64_t n, void* base, DType t, int64_t at) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    X* d = static_cast<X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<X, double> || std::is_same_v<X, float>)
        d[i] = static_cast<X>(src[i]);
      else
        d[i] = from_double<X>(static_cast<double>(src[i]));
    }
  });
}

// a·b over np elements (a multiple of kLanes), 8 partial sums in A (S, or double for dw).
template <class S, class A = S>
A dot(const S* a, const S* b, int64_t np) {
  A part[kLanes] = {};
  for (int64_t c = 0; c < np; c += kLanes)
    for (int l = 0; l < kLanes; ++l) part[l] += static_cast<A>(a[c + l]) * static_cast<A>(b[c + l]);
  A s = 0;
  for (int l = 0; l < kLanes; ++l) s += part[l];
  return s;
}

template <class S>
S gate_exp(S x, bool log2) {
  return log2 ? std::exp2(x) : std::exp(x);
}

// Scratch of one thread.
template <class S>
struct Scratch {
  std::vector<S> qb, kb, vb, ob, db, hs, dhs, ds, dqh, dkh, dqs, dks, gt;
  std::vector<double> row;  // one row of dw, rounded once from fp64
  Scratch(int64_t BT, int64_t Kp, int64_t Vp, int64_t K) {
    auto n = [](int64_t x) { return static_cast<size_t>(x); };
    qb.resize(n(BT * Kp)), kb.resize(n(BT * Kp));
    vb.resize(n(BT * Vp)), ob.resize(n(BT * Vp)), db.resize(n(BT * Vp));
    hs.resize(n(K * Vp)), dhs.resize(n(K * Vp)), ds.resize(n(BT * BT));
    dqh.resize(n(BT * Kp)), dkh.resize(n(BT * Kp)), dqs.resize(n(BT * Kp)), dks.resize(n(BT * Kp));
    gt.resize(n(BT)), row.resize(n(Kp));
  }
};

// One value head hv of the item (chunk ch, key head h): its dq, dk into sc.dqh, sc.dkh ([R, Kp]),
// its dw and dg stored.
template <class S>
void value_head(const Params& p, const training::TimeChunk& ch, int64_t hv, Scratch<S>& sc) {
  const int64_t HV = p.HV, K = p.K, V = p.V, BT = p.BT, R = ch.rows;
  const int64_t Kp = padded(K), Vp = padded(V);
  const S scale = static_cast<S>(p.scale);
  const bool gated = p.g != nullptr;
  const int64_t hbase = (ch.index * HV + hv) * K * V;
  for (int64_t c = 0; c < K; ++c) {
    widen(p.h, p.h_dtype, hbase + c * V, V, Vp, sc.hs.data() + c * Vp);
    widen(p.dh, p.dh_dtype, hbase + c * V, V, Vp, sc.dhs.data() + c * Vp);
  }
  for (int64_t t = 0; t < R; ++t) {
    const int64_t at = ((ch.row0 + t) * HV + hv) * V;
    widen(p.v, p.v_dtype, at, V, Vp, sc.vb.data() + t * Vp);
    widen(p.d_o, p.do_dtype, at, V, Vp, sc.ob.data() + t * Vp);
    if (p.dv2) widen(p.dv2, p.dv2_dtype, at, V, Vp, sc.db.data() + t * Vp);
    if (gated) widen(p.g, p.g_dtype, (ch.row0 + t) * HV + hv, 1, 1, sc.gt.data() + t);
  }
  const S* G = sc.gt.data();
  const S gL = gated ? G[R - 1] : S(0);
  // ds_ij for j ≤ i.
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j <= i; ++j) {
      const S d = dot(sc.ob.data() + i * Vp, sc.vb.data() + j * Vp, Vp);
      sc.ds[i * BT + j] = gated ? scale * gate_exp(G[i] - G[j], p.gate_log2) * d : scale * d;
    }
  // The inter-chunk terms: dq_i = scale·exp(G_i)·h_c do_i, dk_j = exp(G_L − G_j)·dh_c v_j; and the
  // k-term of dg_L, Σ_j k_j·dk_j (these inter parts).
  S kterm = 0;
  for (int64_t t = 0; t < R; ++t) {
    S* dq = sc.dqh.data() + t * Kp;
    S* dk = sc.dkh.data() + t * Kp;
    const S fq = gated ? scale * gate_exp(G[t], p.gate_log2) : scale;
    const S fk = gated ? gate_exp(gL - G[t], p.gate_log2) : S(1);
    for (int64_t c = 0; c < K; ++c) {
      dq[c] = fq * dot(sc.hs.data() + c * Vp, sc.ob.data() + t * Vp, Vp);
      dk[c] = fk * dot(sc.dhs.data() + c * Vp, sc.vb.data() + t * Vp, Vp);
    }
    std::fill(dq + K, dq + Kp, S(0));
    std::fill(dk + K, dk + Kp, S(0));
    if (gated) kterm += dot(sc.kb.data() + t * Kp, dk, Kp);
  }
  // The intra-chunk terms: row axpys over K.
  for (int64_t i = 0; i < R; ++i) {
    S* dq = sc.dqh.data() + i * Kp;
    for (int64_t j = 0; j <= i; ++j) {
      const S s = sc.ds[i * BT + j];
      const S* kj = sc.kb.data() + j * Kp;
      for (int64_t c = 0; c < Kp; ++c) dq[c] += s * kj[c];
    }
  }
  for (int64_t j = 0; j < R; ++j) {
    S* dk = sc.dkh.data() + j * Kp;
    for (int64_t i = j; i < R; ++i) {
      const S s = sc.ds[i * BT + j];
      const S* qi = sc.qb.data() + i * Kp;
      for (int64_t c = 0; c < Kp; ++c) dk[c] += s * qi[c];
    }
  }
  if (gated) {
    S hdh = 0;
    for (int64_t c = 0; c < K; ++c) hdh += dot(sc.hs.data() + c * Vp, sc.dhs.data() + c * Vp, Vp);
    for (int64_t t = 0; t < R; ++t) {
      S d = dot(sc.qb.data() + t * Kp, sc.dqh.data() + t * Kp, Kp) -
            dot(sc.kb.data() + t * Kp, sc.dkh.data() + t * Kp, Kp);
      if (t == R - 1) d += gate_exp(gL, p.gate_log2) * hdh + kterm;
      p.dg[(ch.row0 + t) * HV + hv] = static_cast<float>(d);
    }
  }
  if (p.dv2) {
    double* r = sc.row.data();
    for (int64_t t = 0; t < R; ++t) {
      for (int64_t c = 0; c < K; ++c)
        r[c] = -dot<S, double>(sc.hs.data() + c * Vp, sc.db.data() + t * Vp, Vp);
      narrow(r, K, p.dw, p.dw_dtype, ((ch.row0 + t) * HV + hv) * K);
    }
  }
}

template <class S>
void dqkwg(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const int64_t H = p.H, K = p.K, BT = p.BT, group = p.HV / H;
  const int64_t Kp = padded(K), Vp = padded(p.V);
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Scratch<S> sc(BT, Kp, Vp, K);
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        widen(p.q, p.q_dtype, at, K, Kp, sc.qb.data() + t * Kp);
        widen(p.k, p.k_dtype, at, K, Kp, sc.kb.data() + t * Kp);
      }
      std::fill(sc.dqs.begin(), sc.dqs.begin() + R * Kp, S(0));
      std::fill(sc.dks.begin(), sc.dks.begin() + R * Kp, S(0));
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        value_head(p, ch, hv, sc);
        for (int64_t e = 0; e < R * Kp; ++e) {
          sc.dqs[static_cast<size_t>(e)] += sc.dqh[static_cast<size_t>(e)];
          sc.dks[static_cast<size_t>(e)] += sc.dkh[static_cast<size_t>(e)];
        }
      }
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        narrow(sc.dqs.data() + t * Kp, K, p.dq, p.dq_dtype, at);
        narrow(sc.dks.data() + t * Kp, K, p.dk, p.dk_dtype, at);
      }
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  // Chunk c of all sequences is h[0, c] with offsets; without them NT = ceil(T / BT) exactly
  // (the entry checks), so chunk c of row b, h[b, c], has the running number b·NT + c.
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  if (p.q_dtype == DType::fp64)
    dqkwg<double>(p, chunks, ctx.num_threads);
  else
    dqkwg<float>(p, chunks, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_bwd_dqkwg_ns
