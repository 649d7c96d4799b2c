// stem_prepare reference (the golden, spec §6 and §8): plain loops, fp64 group sums rounded once
// to bf16, fp64 vbias statistics. Single-threaded.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/stem/prepare/impls.h"

namespace recops::ops {
namespace {

double load(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::bf16: return to_double(static_cast<const BFloat16*>(base)[off]);
    case DType::fp16: return to_double(static_cast<const Half*>(base)[off]);
    case DType::fp8_e4m3: return to_double(static_cast<const Fp8E4M3*>(base)[off]);
    default: return 0;
  }
}

}  // namespace

Status stem_prepare_reference(const StemPrepareParams& p, const Context&) {
  const int64_t Df = p.Ts * p.D;
  for (int64_t b = 0; b < p.B; ++b) {
    const int64_t Lq = p.cu_q[b + 1] - p.cu_q[b], Lk = p.Lk[b];
    const int64_t Kb = Lk <= 0 ? 0 : (Lk - 1) / p.Bs + 1;  // §2: a tail block counts as one
    // out[b, h, i, slot·D + d] = bf16(Σ_r x(t, h, d)) over the block's group g (slot g, or Ts-1-g
    // mirrored) of the first `len` tokens, t = i·Bs + g + r·Ts; x already scaled.
    auto group_sums = [&](int64_t H, int64_t NB, int64_t len, bool mirrored, uint16_t* out,
                          auto x) {
      if (Df == 0) return;  // nothing to write (NB may then be huge)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < NB; ++i)
          for (int64_t g = 0; g < p.Ts; ++g)
            for (int64_t d = 0; d < p.D; ++d) {
              double sum = 0;
              for (int64_t r = 0; r < p.R; ++r) {
                const int64_t t = i * p.Bs + g + r * p.Ts;
                if (t >= len) continue;
                sum += x(t, h, d);
              }
              const int64_t slot = mirrored ? p.Ts - 1 - g : g;
              out[((b * H + h) * NB + i) * Df + slot * p.D + d] = bf16_from_double(sum).bits;
            }
    };
    // qflat, natural group order.
    group_sums(p.Nq, p.Qmax, Lq, false, p.qflat, [&](int64_t t, int64_t h, int64_t d) {
      const int64_t tok = p.cu_q[b] + t;
      return static_cast<double>(p.q_scale_at(tok, h)) *
             load(p.q, p.dtype, tok * p.q_tok_stride + h * p.q_head_stride + d);
    });
    // kflat, mirrored group order.
    group_sums(p.Nk, p.Kmax, Lk, true, p.kflat, [&](int64_t s, int64_t h, int64_t d) {
      return static_cast<double>(p.k_scale_at(b, s, h)) * load(p.k, p.dtype, p.k_off(b, s, h) + d);
    });
    // vbias: value-magnitude statistics over n = R·Kb groups of Ts tokens (padded length).
    // With Dv = 0 every m_t is 0, so every ℓ_t equals μ and vbias is 0. It is written as such:
    // Lk is then bounded by no tensor, and the n-group statistics could take O(2^31) steps.
    const int64_t n = p.R * Kb;
    for (int64_t h = 0; h < p.Nk; ++h) {
      if (p.Dv == 0) {
        for (int64_t j = 0; j < p.Kmax; ++j) p.vbias[(b * p.Nk + h) * p.Kmax + j] = 0.0f;
        continue;
      }
      const double vs = std::fabs(static_cast<double>(p.v_scale_at(h)));
      std::vector<double> ell(static_cast<size_t>(n));
      for (int64_t t = 0; t < n; ++t) {
        double m = 0;
        for (int64_t s = t * p.Ts; s < (t + 1) * p.Ts && s < Lk; ++s) {
          double ss = 0;
          for (int64_t d = 0; d < p.Dv; ++d) {
            const double x = vs * load(p.v, p.dtype, p.v_off(b, s, h) + d);
            ss += x * x;
          }
          const double nrm = std::sqrt(ss);
          m = (nrm > m || std::isnan(nrm)) ? nrm : m;  // a NaN sticks (std::max would drop it)
        }
        ell[t] = std::log(m + 1e-6);
      }
      double mu = 0, sigma = 0;
      for (double x : ell) mu += x;
      if (n > 0) mu /= static_cast<double>(n);
      if (n > 1) {
        for (double x : ell) sigma += (x - mu) * (x - mu);
        sigma = std::sqrt(sigma / static_cast<double>(n - 1));
      }
      for (int64_t j = 0; j < p.Kmax; ++j) {
        double vb = 0;
        if (j < Kb) {
          for (int64_t r = 0; r < p.R; ++r) {
            const double z = (ell[j * p.R + r] - mu) / (sigma + 1e-6);
            vb += p.lambda_mag * (z > 0 || std::isnan(z) ? z : 0.0);  // relu, NaN kept
          }
          vb /= static_cast<double>(p.R);
        }
        p.vbias[(b * p.Nk + h) * p.Kmax + j] = static_cast<float>(vb);
      }
    }
  }
  return Status::Ok();
}

}  // namespace recops::ops
