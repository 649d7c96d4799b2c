// training/recompute_w_u_fwd/cpu/recompute_w_u_fwd_cpu.cpp: the optimized CPU path. Work items are
// (chunk, value head hv), split statically over the threads; each output element comes from one
// item, so results do not depend on the thread count. Per item and output (u, then w in a second
// pass), the chunk's R rows of Ai are widened once into a dense [R, R] block, the right-hand rows
// x_j = beta_j · v_j (w: beta_j · exp(G_j) · k_j at key head hv / (HV / H), exp2 with gate_log2;
// G ≤ 0, so only exponentials of non-positive values are formed, training_ops.md §4.2) are
// widened and scaled once into a dense [R, D] block, and each output row is the sum over j of
// Ai[t, j] · x_j, accumulated along the row (D contiguous lanes, vectorisable) in column order,
// four output rows per pass so that each x_j row loaded feeds four accumulators.
// Arithmetic: fp32 (fp64 for an fp64 output), like the double standard's plain baseline.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/recompute_w_u_fwd/impls.h"

namespace recops::ops::recompute_w_u_fwd_ns {
namespace {

constexpr int64_t kRows = 4;  // output rows per pass

template <class S, class T>
S widen(T v) {
  if constexpr (std::is_same_v<T, double>)
    return static_cast<S>(v);
  else
    return static_cast<S>(to_float(v));
}

template <class S, class T>
T narrow(S v) {
  if constexpr (std::is_same_v<S, double>)
    return from_double<T>(v);
  else
    return from_float<T>(v);
}

// Element i of beta, G or Ai (dtype t) as S: a runtime switch, read O(R) or O(R²) times per item
// against the O(R²·D) products.
template <class S>
S load_as(const void* base, DType t, int64_t i) {
  switch (t) {
    case DType::fp64: return static_cast<S>(static_cast<const double*>(base)[i]);
    case DType::fp32: return static_cast<S>(static_cast<const float*>(base)[i]);
    case DType::fp16: return static_cast<S>(to_float(static_cast<const Half*>(base)[i]));
    default: return static_cast<S>(to_float(static_cast<const BFloat16*>(base)[i]));
  }
}

// One output: w (with_k: from k, D = K, heads H) or u (from v, D = V, heads HV). TX: the C++
// type of the source (and of the output); S: the arithmetic type.
template <class S, class TX>
void apply(const Params& p, const std::vector<training::TimeChunk>& chunks, bool with_k,
           int threads) {
  const TX* src = static_cast<const TX*>(with_k ? p.k : p.v);
  TX* dst = static_cast<TX*>(with_k ? p.w : p.u);
  const int64_t HV = p.HV, BT = p.BT, group = HV / p.H;
  const int64_t D = with_k ? p.K : p.V, heads = with_k ? p.H : HV;
  const int64_t items = static_cast<int64_t>(chunks.size()) * HV;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    std::vector<S> a(static_cast<size_t>(BT * BT));
    std::vector<S> x(static_cast<size_t>(BT * D));
    std::vector<S> acc(static_cast<size_t>(kRows * D));
    for (int64_t item = begin; item < end; ++item) {
      const training::TimeChunk& ch = chunks[static_cast<size_t>(item / HV)];
      const int64_t hv = item % HV, R = ch.rows;
      const int64_t head = with_k ? hv / group : hv;
      for (int64_t t = 0; t < R; ++t)
        for (int64_t j = 0; j < R; ++j)
          a[t * BT + j] = load_as<S>(p.Ai, p.Ai_dtype, ((ch.row0 + t) * HV + hv) * BT + j);
      for (int64_t j = 0; j < R; ++j) {
        const int64_t r = ch.row0 + j;
        S c = load_as<S>(p.beta, p.beta_dtype, r * HV + hv);
        if (with_k && p.g) {
          const S gj = load_as<S>(p.g, p.g_dtype, r * HV + hv);
          c = c * (p.gate_log2 ? std::exp2(gj) : std::exp(gj));
        }
        const TX* s = src + (r * heads + head) * D;
        S* xj = x.data() + j * D;
        for (int64_t d = 0; d < D; ++d) xj[d] = c * widen<S>(s[d]);
      }
      // Four output rows per pass: each x_j row loaded once feeds four accumulators.
      for (int64_t t0 = 0; t0 < R; t0 += kRows) {
        const int64_t nr = std::min<int64_t>(kRows, R - t0);
        std::fill(acc.begin(), acc.end(), S(0));
        S* __restrict a0 = acc.data();
        S* __restrict a1 = a0 + D;
        S* __restrict a2 = a1 + D;
        S* __restrict a3 = a2 + D;
        for (int64_t j = 0; j < R; ++j) {
          // Rows past nr use a zero coefficient on a scratch accumulator (never stored).
          const S c0 = a[t0 * BT + j];
          const S c1 = nr > 1 ? a[(t0 + 1) * BT + j] : S(0);
          const S c2 = nr > 2 ? a[(t0 + 2) * BT + j] : S(0);
          const S c3 = nr > 3 ? a[(t0 + 3) * BT + j] : S(0);
          const S* __restrict xj = x.data() + j * D;
          for (int64_t d = 0; d < D; ++d) {
            const S xv = xj[d];
            a0[d] += c0 * xv;
            a1[d] += c1 * xv;
            a2[d] += c2 * xv;
            a3[d] += c3 * xv;
          }
        }
        for (int64_t r = 0; r < nr; ++r) {
          const S* src_acc = acc.data() + r * D;
          TX* o = dst + ((ch.row0 + t0 + r) * HV + hv) * D;
          for (int64_t d = 0; d < D; ++d) o[d] = narrow<S, TX>(src_acc[d]);
        }
      }
    }
  });
}

template <class TX>
void apply_any(const Params& p, const std::vector<training::TimeChunk>& chunks, bool with_k,
               int threads) {
  using S = std::conditional_t<std::is_same_v<TX, double>, double, float>;
  apply<S, TX>(p, chunks, with_k, threads);
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  const bool ok_u = visit_floating(
      p.v_dtype, [&](auto t) { apply_any<decltype(t)>(p, chunks, false, ctx.num_threads); });
  const bool ok_w = visit_floating(
      p.k_dtype, [&](auto t) { apply_any<decltype(t)>(p, chunks, true, ctx.num_threads); });
  if (!ok_u || !ok_w)
    return Status(StatusCode::internal, "recompute_w_u_fwd: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::recompute_w_u_fwd_ns
