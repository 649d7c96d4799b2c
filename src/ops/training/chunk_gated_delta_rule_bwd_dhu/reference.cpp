// training/chunk_gated_delta_rule_bwd_dhu/reference.cpp: the golden (accuracy.md):
// training_ops.md §4.3's recurrence in fp64. The V columns of the recurrence are independent (dv2
// and dS's column v only meet column v), so the golden runs one (sequence, value head hv, column
// v) at a time with a K-vector s = dS[:, v], from the last chunk to the first:
//   dh[c, hv, :, v] = s
//   dv2[t, hv, v]   = dv_local[t, hv, v] + exp(G_L − G_t) · Σ_i k[t, h, i] · s[i]
//   s[i]            ← exp(G_L) · exp(Gk_L[i]) · s[i]
//                     + scale · Σ_t exp(G_t) · q[t, h, i] · do[t, hv, v]
//                     − Σ_t w[t, hv, i] · dv2[t, hv, v]
// (Gk_L[i] = gk[L, hv, i], KDA's per-channel gate at the chunk's last row; the factor is 1 without
// gk, and gk enters nowhere else: q and k are then the gated qg and kg).
// then dh0[n, hv, :, v] = s. The exponentials are formed of G_L, G_t and the difference G_L − G_t
// as written; each output is rounded once to its dtype; dh's chunks beyond the sequences' count
// (the sync-free bound with offsets) are 0. With p.plain, the double standard's plain baseline:
// the same loops with S = fp32 (fp64 for fp64 q), s rounded to k's dtype where it multiplies k
// and dv2 rounded to its dtype where it multiplies w (fla's kernel casts both before its dots; a
// framework composition would read the stored dv2). Includes params.h and core only; shares no
// code with cpu/.
// Its element access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <cmath>
#include <vector>

#include "ops/training/chunk_gated_delta_rule_bwd_dhu/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::round_to;
using training::golden::store;

// S: the arithmetic type (double for the golden; float or double for the plain baseline).
template <class S>
void golden(const Params& p) {
  const int64_t group = p.H > 0 ? p.HV / p.H : 1;
  const int64_t K = p.K, V = p.V, HV = p.HV;
  auto ex = [&](S x) -> S { return p.gate_log2 ? std::exp2(x) : std::exp(x); };
  std::vector<S> s(static_cast<size_t>(K)), dv2(static_cast<size_t>(p.BT));
  int64_t chunk_base = 0;  // with offsets: the index in dh of sequence n's first chunk
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    const int64_t chunks = (last - first + p.BT - 1) / p.BT;
    for (int64_t hv = 0; hv < HV; ++hv) {
      const int64_t h = hv / group;
      for (int64_t v = 0; v < V; ++v) {
        for (int64_t i = 0; i < K; ++i)
          s[static_cast<size_t>(i)] =
              p.dht ? static_cast<S>(load(p.dht, p.dht_dtype, ((n * HV + hv) * K + i) * V + v))
                    : S(0);
        for (int64_t ci = chunks - 1; ci >= 0; --ci) {
          const int64_t dc = p.seq_offsets ? chunk_base + ci : ci;  // the chunk's index in dh
          for (int64_t i = 0; i < K; ++i)
            store(p.dh, p.dh_dtype, (((b * p.NT + dc) * HV + hv) * K + i) * V + v,
                  static_cast<double>(s[static_cast<size_t>(i)]));
          const int64_t c0 = first + ci * p.BT;
          const int64_t c1 = c0 + p.BT < last ? c0 + p.BT : last;  // one past the chunk's end
          const int64_t rL = b * p.T + c1 - 1;
          const S gL = p.g ? static_cast<S>(load(p.g, p.g_dtype, rL * HV + hv)) : S(0);
          for (int64_t t = c0; t < c1; ++t) {
            const int64_t rt = b * p.T + t;
            S ks = 0;
            for (int64_t i = 0; i < K; ++i) {
              S si = s[static_cast<size_t>(i)];
              if (p.plain) si = static_cast<S>(round_to(p.k_dtype, static_cast<double>(si)));
              ks += static_cast<S>(load(p.k, p.k_dtype, (rt * p.H + h) * K + i)) * si;
            }
            S f = 1;
            if (p.g) f = ex(gL - static_cast<S>(load(p.g, p.g_dtype, rt * HV + hv)));
            // exp(G_L − G_t) scales a sum over K: no term at all when K is 0 (whatever g is).
            const S d = static_cast<S>(load(p.dv, p.dv_dtype, (rt * HV + hv) * V + v)) +
                        (K > 0 ? f * ks : S(0));
            store(p.dv2, p.dv2_dtype, (rt * HV + hv) * V + v, static_cast<double>(d));
            dv2[static_cast<size_t>(t - c0)] =
                p.plain ? static_cast<S>(round_to(p.dv2_dtype, static_cast<double>(d))) : d;
          }
          const S decay = p.g ? ex(gL) : S(1);
          for (int64_t i = 0; i < K; ++i) {
            S qd = 0, wd = 0;
            for (int64_t t = c0; t < c1; ++t) {
              const int64_t rt = b * p.T + t;
              const S et = p.g ? ex(static_cast<S>(load(p.g, p.g_dtype, rt * HV + hv))) : S(1);
              qd += et * static_cast<S>(load(p.q, p.q_dtype, (rt * p.H + h) * K + i)) *
                    static_cast<S>(load(p.do_, p.do_dtype, (rt * HV + hv) * V + v));
              wd += static_cast<S>(load(p.w, p.w_dtype, (rt * HV + hv) * K + i)) *
                    dv2[static_cast<size_t>(t - c0)];
            }
            S& si = s[static_cast<size_t>(i)];
            S row_decay = decay;
            if (p.gk)
              row_decay *= ex(static_cast<S>(load(p.gk, p.gk_dtype, (rL * HV + hv) * K + i)));
            si = row_decay * si + static_cast<S>(p.scale) * qd - wd;
          }
        }
        if (p.dh0)
          for (int64_t i = 0; i < K; ++i)
            static_cast<float*>(p.dh0)[((n * HV + hv) * K + i) * V + v] =
                static_cast<float>(s[static_cast<size_t>(i)]);
      }
    }
    if (p.seq_offsets) chunk_base += (last - first + p.BT - 1) / p.BT;
  }
  // dh's chunks that no sequence owns (with offsets: the sync-free bound's spare chunks).
  if (p.seq_offsets)
    for (int64_t c = chunk_base; c < p.NT; ++c)
      for (int64_t e = 0; e < HV * K * V; ++e) store(p.dh, p.dh_dtype, c * HV * K * V + e, 0.0);
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (p.plain && p.q_dtype != DType::fp64)
    golden<float>(p);
  else
    golden<double>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_gated_delta_rule_bwd_dhu_ns
