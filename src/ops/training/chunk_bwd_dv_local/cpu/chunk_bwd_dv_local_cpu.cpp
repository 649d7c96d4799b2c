// training/chunk_bwd_dv_local/cpu/chunk_bwd_dv_local_cpu.cpp: the optimized CPU path. Work items
// are (chunk, key head h). Per item the chunk's q and k rows at head h are converted once into
// dense zero-padded [rows, K] blocks and the upper part (i ≥ j, diagonal included) of the chunk's
// k·qᵀ is formed with 8 independent partial sums per dot (vectorisable); then each value head hv
// of h's group (GVA: hv / (HV / H) = h) converts its do rows and gates once and forms each output
// row as
//   dv_j = Σ_{i ≥ j in the chunk} (scale·exp(G_i − G_j)·(q_i·k_j))·do_i
// with row axpys over V (vectorisable). Only exponentials of the non-positive differences
// G_i − G_j (i ≥ j) are formed (training_ops.md §4.2 Numerics). Arithmetic: fp32 (fp64 for fp64
// do), like the double standard's plain baseline; items are split statically, each output row
// from one item, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_bwd_dv_local/impls.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_bwd_dv_local_ns {
namespace {

constexpr int kParts = 8;  // independent partial sums per dot

// Converts n consecutive elements of a floating tensor (dtype t), from element `from`, to S.
template <class S>
void to_acc(const void* base, DType t, int64_t from, int64_t n, S* out) {
  visit_floating(t, [&](auto tag) {
    using X = decltype(tag);
    const X* src = static_cast<const X*>(base) + from;
    if constexpr (std::is_same_v<X, float> || std::is_same_v<X, double>) {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<S>(src[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<S>(to_float(src[i]));
    }
  });
}

// S: the arithmetic type; TD: the C++ type of dv (= do's).
template <class S, class TD>
void dv_local(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  TD* dv = static_cast<TD*>(p.dv);
  const int64_t H = p.H, HV = p.HV, K = p.K, V = p.V, BT = p.BT, group = HV / H;
  const int64_t Kp = (K + kParts - 1) / kParts * kParts;  // padded row of the q and k blocks
  const S scale = static_cast<S>(p.scale);
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> qrows(static_cast<size_t>(BT * Kp)), krows(static_cast<size_t>(BT * Kp));
    std::vector<S> kq(static_cast<size_t>(BT * BT)), dos(static_cast<size_t>(BT * V));
    std::vector<S> row(static_cast<size_t>(V)), gs(static_cast<size_t>(BT));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      std::fill(qrows.begin(), qrows.begin() + R * Kp, S(0));
      std::fill(krows.begin(), krows.begin() + R * Kp, S(0));
      for (int64_t r = 0; r < R; ++r) {
        const int64_t at = ((ch.row0 + r) * H + h) * K;
        to_acc(p.q, p.q_dtype, at, K, qrows.data() + r * Kp);
        to_acc(p.k, p.k_dtype, at, K, krows.data() + r * Kp);
      }
      // kq[j·BT + i] = k_j·q_i for i ≥ j.
      for (int64_t j = 0; j < R; ++j) {
        const S* kj = krows.data() + j * Kp;
        for (int64_t i = j; i < R; ++i) {
          const S* qi = qrows.data() + i * Kp;
          S part[kParts] = {};
          for (int64_t c = 0; c < Kp; c += kParts)
            for (int l = 0; l < kParts; ++l) part[l] += kj[c + l] * qi[c + l];
          S dot = 0;
          for (int l = 0; l < kParts; ++l) dot += part[l];
          kq[j * BT + i] = dot;
        }
      }
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        for (int64_t r = 0; r < R; ++r) {
          to_acc(p.dout, p.do_dtype, ((ch.row0 + r) * HV + hv) * V, V, dos.data() + r * V);
          if (p.g) to_acc(p.g, p.g_dtype, (ch.row0 + r) * HV + hv, 1, gs.data() + r);
        }
        for (int64_t j = 0; j < R; ++j) {
          S* acc = row.data();
          std::fill(row.begin(), row.end(), S(0));
          for (int64_t i = j; i < R; ++i) {
            S w = scale * kq[j * BT + i];
            if (p.g) {
              const S d = gs[i] - gs[j];
              w *= p.gate_log2 ? std::exp2(d) : std::exp(d);
            }
            const S* di = dos.data() + i * V;
            for (int64_t v = 0; v < V; ++v) acc[v] += w * di[v];
          }
          TD* dst = dv + ((ch.row0 + j) * HV + hv) * V;
          for (int64_t v = 0; v < V; ++v) {
            if constexpr (std::is_same_v<TD, double> || std::is_same_v<TD, float>)
              dst[v] = static_cast<TD>(acc[v]);
            else
              dst[v] = from_double<TD>(static_cast<double>(acc[v]));
          }
        }
      }
    }
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  bool ok = false;
  visit_floating(p.do_dtype, [&](auto tag) {
    using TD = decltype(tag);
    using S = std::conditional_t<std::is_same_v<TD, double>, double, float>;
    dv_local<S, TD>(p, chunks, ctx.num_threads);
    ok = true;
  });
  if (!ok)
    return Status(StatusCode::internal, "chunk_bwd_dv_local: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_bwd_dv_local_ns
