// stem_indexer reference (the golden, spec §8): plain loops written from §3.2. Scores in fp64
// (ascending d, one rounding to fp32), candidates fully sorted by (-κ, j), ids written ascending.
// Single-threaded; the metadata plan is ignored (results never depend on it).
//
// The score-independent rules (visible count, forced set, budget) are derived here again from the
// spec and share no code with common/stem_rules.h, which the CPU and CUDA implementations compile:
// a mistake there shows up as a difference in `recops check`. Only the attributes are read from
// p.rules (as the entry converted them: floats to fp32 once).
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/stem/indexer/impls.h"
#include "recops/dtype.h"

namespace recops::ops {
namespace {

// §2: blocks of a length, a partial tail block counting as one.
int64_t blocks(int64_t tokens, int64_t Bs) {
  return tokens <= 0 ? 0 : (tokens - 1) / Bs + 1;
}

// fl32(x): rounding to the nearest fp32. Each step below is one exact double operation on fp32
// values rounded once: products of two fp32 values are exact in double, and for the quotient and
// the difference double's 53 bits (>= 2·24 + 2) make the double rounding innocuous, so each
// equals the correctly rounded fp32 operation the spec writes.
float fl32(double x) {
  return static_cast<float>(x);
}

// §3.2 step 6, first line: Ks of the prompt's block count P (the tiers start at 56 and 160).
int64_t prompt_budget(const stem::StemRules& a, int64_t P) {
  if (P < 56) return P;
  const bool large = P >= 160;
  const float rate = large ? a.rate_large : a.rate_medium;
  const float prod = fl32(static_cast<double>(fl32(static_cast<double>(P))) * rate);
  return static_cast<int64_t>(std::floor(prod)) + (large ? a.bias_large : a.bias_medium);
}

// §3.2 step 6: K̂ of the row at right-down position p = i + Kb - Qb with `cand` candidates.
int64_t row_budget(const stem::StemRules& a, int64_t P, int64_t p, int64_t cand) {
  const int64_t Ks = prompt_budget(a, P);
  const int64_t delta = P - Ks;
  int64_t K = Ks;
  if (p >= Ks && delta > 1) {
    const float t = fl32(static_cast<double>(fl32(static_cast<double>(p - Ks))) /
                         static_cast<double>(fl32(static_cast<double>(delta - 1))));
    const float ks = fl32(static_cast<double>(Ks));
    const float ke = fl32(static_cast<double>(ks) * a.alpha);
    const float d = fl32(static_cast<double>(ke) - ks);
    const float k = std::fmaf(t, d, ks);  // fma32: one fused multiply-add, one fp32 rounding
    K = std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(k)), 1), Ks);
  }
  return std::min<int64_t>({std::max<int64_t>(K, 0), 256, cand});
}

}  // namespace

Status stem_indexer_reference(const StemIndexerParams& p, const Context&) {
  const stem::StemRules& a = p.rules;
  const double inv_r2 = 1.0 / static_cast<double>(p.R * p.R);
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t Lq = p.Lq[b], Lk = p.Lk[b], Lp = p.Lp[b];
    const int64_t Qb = blocks(Lq, a.Bs), Kb = blocks(Lk, a.Bs), P = blocks(Lp, a.Bs);
    const bool decode = Lq == 1 && Lp >= Lk;
    for (int64_t hq = 0; hq < p.Nq; ++hq) {
      const int64_t hk = hq / p.G;
      for (int64_t i = 0; i < p.Qmax; ++i) {
        int32_t* out = p.indices + ((b * p.Nq + hq) * p.Qmax + i) * p.Kmax;
        int32_t* len = p.seq_len + (b * p.Nq + hq) * p.Qmax + i;
        // Step 1 and 2: the visible count V (0 for a padding row).
        int64_t V = 0;
        if (i < Qb) V = (!a.causal || decode) ? Kb : std::clamp<int64_t>(Kb - Qb + i + 1, 0, Kb);
        // Step 3: F = S ∪ W as a membership list over [0, V).
        std::vector<char> forced(static_cast<size_t>(V), 0);
        for (int64_t j = 0; j < std::min(a.initial_blocks, V); ++j) forced[j] = 1;
        for (int64_t j = std::max<int64_t>(V - a.window_size, 0); j < V; ++j) forced[j] = 1;
        // Steps 4 and 5: the candidates C = [0, V) \ F and their rank keys κ.
        std::vector<int64_t> sel;
        std::vector<std::pair<float, int64_t>> cand;  // (κ, j)
        const uint16_t* q = p.qflat + b * p.q_stride[0] + hq * p.q_stride[1] + i * p.q_stride[2];
        for (int64_t j = 0; j < V; ++j) {
          if (forced[j]) {
            sel.push_back(j);
            continue;
          }
          const uint16_t* k = p.kflat + b * p.k_stride[0] + hk * p.k_stride[1] + j * p.k_stride[2];
          double dot = 0;
          for (int64_t d = 0; d < p.Df; ++d)
            dot += static_cast<double>(to_float(BFloat16{q[d]})) *
                   static_cast<double>(to_float(BFloat16{k[d]}));
          const double vb = p.vbias[b * p.v_stride[0] + hk * p.v_stride[1] + j * p.v_stride[2]];
          float s = static_cast<float>(dot * inv_r2 + vb);
          if (s != s) s = -INFINITY;  // NaN ranks as -inf
          if (s == 0.0f) s = 0.0f;    // -0 equals +0
          if (p.precision == 2) s = static_cast<float>(to_double(bf16_from_double(s)));
          cand.push_back({s, j});
        }
        // Steps 6 and 7: the K̂ largest κ, ties to the lower j.
        const int64_t K =
            V > 0 ? row_budget(a, P, i + Kb - Qb, static_cast<int64_t>(cand.size())) : 0;
        std::sort(cand.begin(), cand.end(), [](const auto& x, const auto& y) {
          return x.first != y.first ? x.first > y.first : x.second < y.second;
        });
        for (int64_t t = 0; t < K; ++t) sel.push_back(cand[t].second);
        // Step 8: the ids ascending, then -1.
        std::sort(sel.begin(), sel.end());
        for (int64_t t = 0; t < p.Kmax; ++t)
          out[t] = t < static_cast<int64_t>(sel.size()) ? static_cast<int32_t>(sel[t]) : -1;
        *len = static_cast<int32_t>(sel.size());
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
