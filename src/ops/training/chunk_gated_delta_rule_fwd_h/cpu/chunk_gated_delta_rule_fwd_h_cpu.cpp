// training/chunk_gated_delta_rule_fwd_h/cpu/chunk_gated_delta_rule_fwd_h_cpu.cpp: the optimized
// CPU path. Work items are (sequence, value head hv); each walks its sequence's chunks in time
// order with the state S [K, V] held in A = fp32 (fp64 for fp64 k), as §4.2 keeps it:
//   h_c = S (stored in h's dtype);  v_new_t = u_t − Σ_i w_t[i]·S[i, :]  (row axpys over V)
//   S ← exp(G_L)·S + Σ_t k_t[i]·(exp(G_L − G_t)·v_new_t)[:]             (row axpys over V)
// v_new is stored unscaled in u's dtype; the scaled rows stay in A (no intermediate rounding).
// With gk (KDA's per-channel gate cumsum) row i of S is also scaled by exp(gk_L[i]) before the
// update (k is used as given: KDA passes it gated).
// Only exponentials of G_L and of the non-positive differences G_L − G_t are formed. Items are
// split statically over threads, each output element from one item, so results do not depend on
// the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_gated_delta_rule_fwd_h/impls.h"
#include "ops/training/common/ce_row_cpu.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns {
namespace {

// dst[0, n) = elements [at, at + n) of a floating tensor of dtype t, as A.
template <class A>
void read_as(const void* base, DType t, int64_t at, int64_t n, A* dst) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    const X* s = static_cast<const X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) dst[i] = training::ce_load<A>(s[i]);
  });
}

// Elements [at, at + n) of a floating tensor of dtype t = src[0, n), rounded once.
template <class A>
void write_as(void* base, DType t, int64_t at, int64_t n, const A* src) {
  visit_floating(t, [&](auto x) {
    using X = decltype(x);
    X* d = static_cast<X*>(base) + at;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<X, A>)
        d[i] = src[i];
      else
        d[i] = from_double<X>(static_cast<double>(src[i]));
    }
  });
}

template <class A>
A gate_pow(A x, bool log2) {
  return log2 ? std::exp2(x) : std::exp(x);
}

template <class A>
void fwd_h(const Params& p, const std::vector<training::TimeChunk>& chunks,
           const std::vector<int64_t>& seq_chunk0, int threads) {
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, KV = K * V, group = HV / H;
  core::parallel_for(p.N * HV, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<A> S(static_cast<size_t>(KV)), vn(static_cast<size_t>(BT * V));
    std::vector<A> wr(static_cast<size_t>(K)), kr(static_cast<size_t>(K));
    std::vector<A> gt(static_cast<size_t>(BT)), gkr(static_cast<size_t>(K));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / HV, hv = item % HV, kh = hv / group;
      if (p.h0)
        read_as(p.h0, p.h0_dtype, item * KV, KV, S.data());
      else
        std::fill(S.begin(), S.end(), A(0));
      for (int64_t c = seq_chunk0[n]; c < seq_chunk0[n + 1]; ++c) {
        const training::TimeChunk& ch = chunks[static_cast<size_t>(c)];
        const int64_t R = ch.rows;
        write_as(p.h, p.h_dtype, (ch.index * HV + hv) * KV, KV, S.data());
        for (int64_t t = 0; t < R; ++t) {
          const int64_t row = ch.row0 + t;
          A* x = vn.data() + t * V;
          read_as(p.u, p.u_dtype, (row * HV + hv) * V, V, x);
          read_as(p.w, p.w_dtype, (row * HV + hv) * K, K, wr.data());
          for (int64_t i = 0; i < K; ++i) {
            const A wi = wr[i];
            const A* si = S.data() + i * V;
            for (int64_t j = 0; j < V; ++j) x[j] -= wi * si[j];
          }
          write_as(p.v_new, p.u_dtype, (row * HV + hv) * V, V, x);
        }
        if (p.g) {
          for (int64_t t = 0; t < R; ++t)
            read_as(p.g, p.g_dtype, (ch.row0 + t) * HV + hv, 1, gt.data() + t);
          const A g_last = gt[R - 1];
          for (int64_t t = 0; t < R; ++t) {
            const A f = gate_pow(g_last - gt[t], p.gate_log2);
            A* x = vn.data() + t * V;
            for (int64_t j = 0; j < V; ++j) x[j] *= f;
          }
          const A decay = gate_pow(g_last, p.gate_log2);
          for (int64_t e = 0; e < KV; ++e) S[e] *= decay;
        }
        if (p.gk) {
          read_as(p.gk, p.gk_dtype, ((ch.row0 + R - 1) * HV + hv) * K, K, gkr.data());
          for (int64_t i = 0; i < K; ++i) {
            const A f = gate_pow(gkr[i], p.gate_log2);
            A* si = S.data() + i * V;
            for (int64_t j = 0; j < V; ++j) si[j] *= f;
          }
        }
        for (int64_t t = 0; t < R; ++t) {
          read_as(p.k, p.k_dtype, ((ch.row0 + t) * H + kh) * K, K, kr.data());
          const A* x = vn.data() + t * V;
          for (int64_t i = 0; i < K; ++i) {
            const A ki = kr[i];
            A* si = S.data() + i * V;
            for (int64_t j = 0; j < V; ++j) si[j] += ki * x[j];
          }
        }
      }
      if (p.ht) write_as(p.ht, DType::fp32, item * KV, KV, S.data());
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  // Chunk c of all sequences is h[0, c] with offsets; without them NT = ceil(T / BT) exactly
  // (the entry checks), so chunk c of row b, h[b, c], has the running number b·NT + c.
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  // seq_chunk0[n]: sequence n's first chunk in the list (its chunks are consecutive there).
  std::vector<int64_t> seq_chunk0(static_cast<size_t>(p.N + 1), 0);
  for (int64_t n = 0; n < p.N; ++n) {
    auto off = [&](int64_t i) -> int64_t {
      return p.off_dtype == DType::int32 ? static_cast<const int32_t*>(p.seq_offsets)[i]
                                         : static_cast<const int64_t*>(p.seq_offsets)[i];
    };
    const int64_t len = p.seq_offsets ? off(n + 1) - off(n) : p.T;
    seq_chunk0[n + 1] = seq_chunk0[n] + (len + p.BT - 1) / p.BT;
  }
  // With offsets NT is a bound: h's chunks past the sequences' are zero.
  const int64_t used = static_cast<int64_t>(chunks.size()) * p.HV * p.K * p.V;
  const int64_t total = p.B * p.NT * p.HV * p.K * p.V;
  if (total > used) {
    const std::vector<double> zeros(static_cast<size_t>(total - used), 0.0);
    write_as(p.h, p.h_dtype, used, total - used, zeros.data());
  }
  if (p.k_dtype == DType::fp64)
    fwd_h<double>(p, chunks, seq_chunk0, ctx.num_threads);
  else
    fwd_h<float>(p, chunks, seq_chunk0, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_gated_delta_rule_fwd_h_ns
