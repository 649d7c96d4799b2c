// stem_indexer reference (the golden, spec §8): plain loops written from §3.2. Scores in fp64
// (ascending d, one rounding to fp32), candidates fully sorted by (-κ, j), ids written ascending.
// Single-threaded; the metadata plan is ignored (results never depend on it).
#include <algorithm>
#include <vector>

#include "ops/stem/indexer/impls.h"
#include "recops/dtype.h"

namespace recops::ops {

Status stem_indexer_reference(const StemIndexerParams& p, const Context&) {
  const stem::StemRules& r = p.rules;
  const double inv_r2 = 1.0 / static_cast<double>(p.R * p.R);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t Lq = p.Lq[b], Lk = p.Lk[b], Lp = p.Lp[b];
    for (int64_t hq = 0; hq < p.Nq; ++hq) {
      const int64_t hk = hq / p.G;
      for (int64_t i = 0; i < p.Qmax; ++i) {
        int32_t* out = p.indices + ((b * p.Nq + hq) * p.Qmax + i) * p.Kmax;
        int32_t* len = p.seq_len + (b * p.Nq + hq) * p.Qmax + i;
        std::vector<int64_t> sel;
        const int64_t V = stem::visible_blocks(r, Lq, Lk, Lp, i);  // 0 for padding rows
        if (V > 0) {
          const stem::Forced f = stem::forced_set(r, V);
          std::vector<std::pair<float, int64_t>> cand;  // (κ, j)
          const uint16_t* q = p.qflat + b * p.q_stride[0] + hq * p.q_stride[1] + i * p.q_stride[2];
          for (int64_t j = 0; j < V; ++j) {
            if (stem::is_forced(f, j)) {
              sel.push_back(j);
              continue;
            }
            const uint16_t* k =
                p.kflat + b * p.k_stride[0] + hk * p.k_stride[1] + j * p.k_stride[2];
            double dot = 0;
            for (int64_t d = 0; d < p.Df; ++d)
              dot += static_cast<double>(to_float(BFloat16{q[d]})) *
                     static_cast<double>(to_float(BFloat16{k[d]}));
            const double vb = p.vbias[b * p.v_stride[0] + hk * p.v_stride[1] + j * p.v_stride[2]];
            float s = static_cast<float>(dot * inv_r2 + vb);
            if (s != s) s = -INFINITY;  // NaN ranks as -inf
            if (s == 0.0f) s = 0.0f;    // -0 equals +0
            if (p.precision == 2) s = stem::round_bf16(s);
            cand.push_back({s, j});
          }
          const int64_t K = stem::budget_k(r, Lq, Lk, Lp, i, static_cast<int64_t>(cand.size()));
          std::sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) {
            return x.first != y.first ? x.first > y.first : x.second < y.second;
          });
          for (int64_t t = 0; t < K; ++t) sel.push_back(cand[t].second);
          std::sort(sel.begin(), sel.end());
        }
        for (int64_t t = 0; t < p.Kmax; ++t)
          out[t] = t < static_cast<int64_t>(sel.size()) ? static_cast<int32_t>(sel[t]) : -1;
        *len = static_cast<int32_t>(sel.size());
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
