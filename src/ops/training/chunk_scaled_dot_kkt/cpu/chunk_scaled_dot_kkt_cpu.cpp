// training/chunk_scaled_dot_kkt/cpu/chunk_scaled_dot_kkt_cpu.cpp: the optimized CPU path. Work
// items are (chunk, key head h); per item the chunk's rows of k at head h are widened once into a
// dense [rows, K] block, the strictly lower triangle of its Gram matrix k_t·k_j is formed with
// 8 independent partial sums per dot (vectorisable), and then each value head hv of h's group
// (GVA: hv / (HV / H) = h) scales it: A = beta_t · gram · exp(G_t − G_j) (exp2 with gate_log2),
// only for j < t, so only exponentials of non-positive differences of a cumsum of log decays are
// formed (training_ops.md §4.2 Numerics). Every element of the item's rows of A is written (zeros
// above the diagonal and past a tail chunk). Arithmetic: fp32 (fp64 for fp64 k), like the double
// standard's plain baseline; items are split statically, each output from one item, so results
// do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/chunk_scaled_dot_kkt/impls.h"

namespace recops::ops::chunk_scaled_dot_kkt_ns {
namespace {

constexpr int kLanes = 8;  // partial sums per dot

template <class S, class T>
S widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return static_cast<S>(v);
  else
    return static_cast<S>(to_float(v));
}

// Element i of beta or G (dtype t) as S: a runtime switch, read only BT times per (chunk, hv).
template <class S>
S load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(to_float(static_cast<const Half*>(base)[i]));
    default: return static_cast<S>(to_float(static_cast<const BFloat16*>(base)[i]));
  }
}

// S: the arithmetic type; TK: the C++ type of k.
template <class S, class TK>
void kkt(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const TK* k = static_cast<const TK*>(p.k);
  const int64_t H = p.H, HV = p.HV, K = p.K, BT = p.BT, group = HV / H;
  const int64_t Kp = (K + kLanes - 1) / kLanes * kLanes;  // padded row of the block
  const int64_t items = static_cast<int64_t>(chunks.size()) * H;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> block(static_cast<size_t>(BT * Kp));
    std::vector<S> gram(static_cast<size_t>(BT * BT));
    std::vector<S> gt(static_cast<size_t>(BT)), bt(static_cast<size_t>(BT));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / H)];
      const int64_t h = item % H, R = ch.rows;
      // The chunk's k rows at head h, widened, zero-padded to Kp.
      for (int64_t t = 0; t < R; ++t) {
        const TK* src = k + ((ch.row0 + t) * H + h) * K;
        S* dst = block.data() + t * Kp;
        for (int64_t c = 0; c < K; ++c) dst[c] = widen<S>(src[c]);
        for (int64_t c = K; c < Kp; ++c) dst[c] = 0;
      }
      // The strictly lower triangle of the Gram matrix.
      for (int64_t t = 1; t < R; ++t) {
        const S* kt = block.data() + t * Kp;
        for (int64_t j = 0; j < t; ++j) {
          const S* kj = block.data() + j * Kp;
          S acc[kLanes] = {};
          for (int64_t c = 0; c < Kp; c += kLanes)
            for (int l = 0; l < kLanes; ++l) acc[l] += kt[c + l] * kj[c + l];
          S dot = 0;
          for (int l = 0; l < kLanes; ++l) dot += acc[l];
          gram[t * BT + j] = dot;
        }
      }
      for (int64_t hv = h * group; hv < (h + 1) * group; ++hv) {
        for (int64_t t = 0; t < R; ++t) {
          bt[t] = load_as<S>(p.beta, p.beta_dtype, (ch.row0 + t) * HV + hv);
          gt[t] = p.g ? load_as<S>(p.g, p.g_dtype, (ch.row0 + t) * HV + hv) : S(0);
        }
        for (int64_t t = 0; t < R; ++t) {
          float* a = p.A + ((ch.row0 + t) * HV + hv) * BT;
          const S* gr = gram.data() + t * BT;
          if (!p.g)
            for (int64_t j = 0; j < t; ++j) a[j] = static_cast<float>(bt[t] * gr[j]);
          else if (p.gate_log2)
            for (int64_t j = 0; j < t; ++j)
              a[j] = static_cast<float>(bt[t] * gr[j] * std::exp2(gt[t] - gt[j]));
          else
            for (int64_t j = 0; j < t; ++j)
              a[j] = static_cast<float>(bt[t] * gr[j] * std::exp(gt[t] - gt[j]));
          std::fill(a + t, a + BT, 0.0f);
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
  visit_floating(p.k_dtype, [&](auto tk) {
    using TK = decltype(tk);
    using S = std::conditional_t<std::is_same_v<TK, double>, double, float>;
    kkt<S, TK>(p, chunks, ctx.num_threads);
    ok = true;
  });
  if (!ok)
    return Status(StatusCode::internal,
                  "chunk_scaled_dot_kkt: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::chunk_scaled_dot_kkt_ns
