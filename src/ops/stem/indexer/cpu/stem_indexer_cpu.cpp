// stem_indexer, optimised CPU (spec §8): OpenMP over work items (b, hk, a run of query blocks)
// in plan order (the metadata when given, else the same plan computed here), each item scoring
// its G·Tq rows against the visible key blocks only (blocks past a row's V are never touched:
// the causal tiles are skipped), fp32 accumulation in 16 independent lanes (a fixed order, so
// results do not depend on threads or scheduling), bf16 -> fp32 conversion once per item and
// key chunk, and per-row top-K by std::nth_element on the (κ, j) total order.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "ops/stem/indexer/impls.h"

namespace recops::ops {
namespace {

constexpr int kLanes = 16;
constexpr int kKeyChunk = 4;  // key blocks scored per pass over a query row

inline float bf16_bits_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void to_fp32(const uint16_t* src, int64_t n, float* dst) {
  for (int64_t d = 0; d < n; ++d) dst[d] = bf16_bits_to_float(src[d]);
}

// Dot products of one fp32 row with nk (<= kKeyChunk) fp32 key rows, 16 lanes each, lanes
// summed pairwise at the end (the same order on every call).
void dot_chunk(const float* q, const float* const* k, int nk, int64_t n, float* out) {
  float acc[kKeyChunk][kLanes] = {};
  const int64_t full = n / kLanes * kLanes;
  for (int64_t d = 0; d < full; d += kLanes)
    for (int c = 0; c < nk; ++c)
      for (int l = 0; l < kLanes; ++l) acc[c][l] += q[d + l] * k[c][d + l];
  for (int64_t d = full; d < n; ++d)
    for (int c = 0; c < nk; ++c) acc[c][d - full] += q[d] * k[c][d];
  for (int c = 0; c < nk; ++c) {
    float* a = acc[c];
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) a[l] += a[l + w];
    out[c] = a[0];
  }
}

void write_empty(const StemIndexerParams& p, int64_t b, int64_t hq, int64_t i) {
  int32_t* out = p.indices + ((b * p.Nq + hq) * p.Qmax + i) * p.Kmax;
  std::fill(out, out + p.Kmax, -1);
  p.seq_len[(b * p.Nq + hq) * p.Qmax + i] = 0;
}

}  // namespace

Status stem_indexer_cpu(const StemIndexerParams& p, const Context& ctx) {
  const stem::StemRules& r = p.rules;
  std::vector<int32_t> plan = p.plan;
  if (plan.empty()) {
    StemIndexerMetadataParams mp;
    mp.Lq = p.Lq;
    mp.Lk = p.Lk;
    mp.q_raw.assign(p.Lq.begin(), p.Lq.end());
    mp.kv_raw.assign(p.Lk.begin(), p.Lk.end());
    mp.B = p.B;
    mp.Nq = p.Nq;
    mp.Nk = p.Nk;
    mp.causal = r.causal;
    mp.Bs = r.Bs;
    mp.Df = p.Df;
    mp.window_size = r.window_size;
    plan = stem_metadata_words(mp);
  }
  const std::vector<StemWorkItem> items = stem_work_items(plan, p.Nk, p.Lq, r.Bs);
  const float inv_r2 = 1.0f / static_cast<float>(p.R * p.R);
  const int64_t Df = p.Df, G = p.G;
  const int64_t n_items = static_cast<int64_t>(items.size());
  const int nt = core::max_threads(ctx.num_threads, n_items);

#pragma omp parallel num_threads(nt)
  {
    std::vector<float> qbuf, kbuf(static_cast<size_t>(kKeyChunk * Df)), scores;
    std::vector<uint64_t> cand;
#pragma omp for schedule(dynamic, 1)
    for (int64_t it = 0; it < n_items; ++it) {
      const StemWorkItem& w = items[it];
      const int64_t b = w.b, hk = w.hk, nb = w.i_end - w.i_begin, rows = G * nb;
      const int64_t Lq = p.Lq[b], Lk = p.Lk[b], Lp = p.Lp[b];
      // Row r = g·nb + (i - i_begin) for query head hq = hk·G + g.
      std::vector<int64_t> V(static_cast<size_t>(rows));
      int64_t vmax = 0;
      for (int64_t rr = 0; rr < rows; ++rr) {
        V[rr] = stem::visible_blocks(r, Lq, Lk, Lp, w.i_begin + rr % nb);
        vmax = std::max(vmax, V[rr]);
      }
      qbuf.resize(static_cast<size_t>(rows * Df));
      scores.resize(static_cast<size_t>(rows * std::max<int64_t>(vmax, 1)));
      for (int64_t rr = 0; rr < rows; ++rr) {
        if (V[rr] == 0) continue;
        const int64_t hq = hk * G + rr / nb, i = w.i_begin + rr % nb;
        to_fp32(p.qflat + b * p.q_stride[0] + hq * p.q_stride[1] + i * p.q_stride[2], Df,
                qbuf.data() + rr * Df);
      }
      // Scores of every visible block of every row (forced ones are ignored later).
      for (int64_t j0 = 0; j0 < vmax; j0 += kKeyChunk) {
        const int nk = static_cast<int>(std::min<int64_t>(kKeyChunk, vmax - j0));
        const float* kp[kKeyChunk];
        for (int c = 0; c < nk; ++c) {
          float* dst = kbuf.data() + c * Df;
          to_fp32(p.kflat + b * p.k_stride[0] + hk * p.k_stride[1] + (j0 + c) * p.k_stride[2], Df,
                  dst);
          kp[c] = dst;
        }
        for (int64_t rr = 0; rr < rows; ++rr) {
          if (V[rr] <= j0) continue;  // a causal tile beyond this row: skipped
          const int n = static_cast<int>(std::min<int64_t>(nk, V[rr] - j0));
          float dots[kKeyChunk];
          dot_chunk(qbuf.data() + rr * Df, kp, n, Df, dots);
          for (int c = 0; c < n; ++c) {
            const int64_t j = j0 + c;
            const float vb = p.vbias[b * p.v_stride[0] + hk * p.v_stride[1] + j * p.v_stride[2]];
            scores[rr * vmax + j] = dots[c] * inv_r2 + vb;
          }
        }
      }
      // Selection and output per row.
      for (int64_t rr = 0; rr < rows; ++rr) {
        const int64_t hq = hk * G + rr / nb, i = w.i_begin + rr % nb;
        const int64_t Vr = V[rr];
        if (Vr == 0) {
          write_empty(p, b, hq, i);
          continue;
        }
        const stem::Forced f = stem::forced_set(r, Vr);
        cand.clear();
        for (int64_t j = f.s_end; j < f.w_begin; ++j)
          cand.push_back(stem::order_key(stem::rank_key(scores[rr * vmax + j], p.precision), j));
        const int64_t K = stem::budget_k(r, Lq, Lk, Lp, i, static_cast<int64_t>(cand.size()));
        if (K < static_cast<int64_t>(cand.size()))
          std::nth_element(cand.begin(), cand.begin() + K, cand.end(), std::greater<uint64_t>());
        int32_t* out = p.indices + ((b * p.Nq + hq) * p.Qmax + i) * p.Kmax;
        int64_t L = 0;
        for (int64_t j = 0; j < f.s_end; ++j) out[L++] = static_cast<int32_t>(j);
        for (int64_t t = 0; t < K; ++t)
          out[L++] = static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(cand[t]));
        for (int64_t j = f.w_begin; j < Vr; ++j) out[L++] = static_cast<int32_t>(j);
        std::sort(out + f.s_end, out + f.s_end + K);
        std::fill(out + L, out + p.Kmax, -1);
        p.seq_len[(b * p.Nq + hq) * p.Qmax + i] = static_cast<int32_t>(L);
      }
    }
    // Rows no item covers: padding rows i >= Qb.
#pragma omp for schedule(static)
    for (int64_t bh = 0; bh < p.B * p.Nq; ++bh) {
      const int64_t b = bh / p.Nq, hq = bh % p.Nq;
      for (int64_t i = stem::ceil_div(p.Lq[b], r.Bs); i < p.Qmax; ++i) write_empty(p, b, hq, i);
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
