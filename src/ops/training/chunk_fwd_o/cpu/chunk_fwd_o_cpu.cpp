// training/chunk_fwd_o/cpu/chunk_fwd_o_cpu.cpp: the optimized CPU path. Work items are (chunk,
// key head h). Per item the chunk's q and k rows at head h are widened once into dense [rows, K]
// blocks and the lower triangle (diagonal included) of q·kᵀ is formed with 8 independent partial
// sums per dot (vectorisable); then each value head hv of h's group (GVA: hv / (HV / H) = h)
// widens its state h_c [K, V] and its v_new rows once and forms each output row as
//   o_t = scale·exp(G_t)·Σ_c q_tc·h_c[c, :]  +  Σ_{j ≤ t} (scale·exp(G_t − G_j)·(q_t·k_j))·v_j
// with row axpys over V (vectorisable). Only exponentials of G_t and of non-positive differences
// G_t − G_j (j ≤ t) are formed (training_ops.md §4.2 Numerics). Arithmetic: fp32 (fp64 for fp64
// q), like the double standard's plain baseline; items are split statically, each output row from
// one item, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_fwd_o/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_fwd_o_ns {
namespace {

constexpr int kLanes = 8;  // partial sums per dot

// dst[0, n) = the n elements of a floating tensor (dtype t) from element `at`, as S.
template <class S>
void widen(const void* base, DType t, int64_t at, int64_t n, S* dst) {
  switch (t) {
    case DType::fp64: {
      const double* s = static_cast<const double*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(s[i]);
      break;
    }
    case DType::fp32: {
      const float* s = static_cast<const float*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(s[i]);
      break;
    }
    case DType::fp16: {
      const Half* s = static_cast<const Half*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(s[i]));
      break;
    }
    default: {
      const BFloat16* s = static_cast<const BFloat16*>(base) + at;
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<S>(to_float(s[i]));
      break;
    }
  }
}

template <class S>
S gate_exp(S x, bool log2) {
  return log2 ? std::exp2(x) : std::exp(x);
}

// S: the arithmetic type; TO: the C++ type of o (= q's).
template <class S, class TO>
void fwd_o(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  TO* o = static_cast<TO*>(p.o);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const int64_t Kp = (K + kLanes - 1) / kLanes * kLanes;  // padded row of the q and k blocks
  const S scale = static_cast<S>(p.scale);
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> qb(static_cast<size_t>(BT * Kp)), kb(static_cast<size_t>(BT * Kp));
    std::vector<S> qk(static_cast<size_t>(BT * BT)), hs(static_cast<size_t>(K * V));
    std::vector<S> vs(static_cast<size_t>(BT * V)), acc(static_cast<size_t>(V));
    std::vector<S> gt(static_cast<size_t>(BT));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      for (int64_t t = 0; t < R; ++t) {
        const int64_t at = ((ch.row0 + t) * H + h) * K;
        widen(p.q, p.q_dtype, at, K, qb.data() + t * Kp);
        widen(p.k, p.k_dtype, at, K, kb.data() + t * Kp);
        std::fill(qb.begin() + t * Kp + K, qb.begin() + (t + 1) * Kp, S(0));
        std::fill(kb.begin() + t * Kp + K, kb.begin() + (t + 1) * Kp, S(0));
      }
      // q_t·k_j for j ≤ t.
      for (int64_t t = 0; t < R; ++t) {
        const S* qt = qb.data() + t * Kp;
        for (int64_t j = 0; j <= t; ++j) {
          const S* kj = kb.data() + j * Kp;
          S part[kLanes] = {};
          for (int64_t c = 0; c < Kp; c += kLanes)
            for (int l = 0; l < kLanes; ++l) part[l] += qt[c + l] * kj[c + l];
          S dot = 0;
          for (int l = 0; l < kLanes; ++l) dot += part[l];
          qk[t * BT + j] = dot;
        }
      }
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        widen(p.h, p.h_dtype, (ch.index * HV + hv) * K * V, K * V, hs.data());
        for (int64_t t = 0; t < R; ++t) {
          widen(p.v, p.v_dtype, ((ch.row0 + t) * HV + hv) * V, V, vs.data() + t * V);
          if (p.g) widen(p.g, p.g_dtype, (ch.row0 + t) * HV + hv, 1, gt.data() + t);
        }
        for (int64_t t = 0; t < R; ++t) {
          S* a = acc.data();
          std::fill(acc.begin(), acc.end(), S(0));
          const S* qt = qb.data() + t * Kp;
          for (int64_t c = 0; c < K; ++c) {
            const S x = qt[c];
            const S* hr = hs.data() + c * V;
            for (int64_t v = 0; v < V; ++v) a[v] += x * hr[v];
          }
          const S f = p.g ? scale * gate_exp(gt[t], p.gate_log2) : scale;
          for (int64_t v = 0; v < V; ++v) a[v] *= f;
          for (int64_t j = 0; j <= t; ++j) {
            const S w = p.g ? scale * gate_exp(gt[t] - gt[j], p.gate_log2) * qk[t * BT + j]
                            : scale * qk[t * BT + j];
            const S* vj = vs.data() + j * V;
            for (int64_t v = 0; v < V; ++v) a[v] += w * vj[v];
          }
          TO* dst = o + ((ch.row0 + t) * HV + hv) * V;
          for (int64_t v = 0; v < V; ++v) {
            if constexpr (std::is_same_v<TO, double> || std::is_same_v<TO, float>)
              dst[v] = static_cast<TO>(a[v]);
            else
              dst[v] = from_double<TO>(static_cast<double>(a[v]));
          }
        }
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
  bool ok = false;
  visit_floating(p.q_dtype, [&](auto tq) {
    using TQ = decltype(tq);
    using S = std::conditional_t<std::is_same_v<TQ, double>, double, float>;
    fwd_o<S, TQ>(p, chunks, ctx.num_threads);
    ok = true;
  });
  if (!ok) return Status(StatusCode::internal, "chunk_fwd_o: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_fwd_o_ns
