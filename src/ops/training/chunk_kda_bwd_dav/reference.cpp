// training/chunk_kda_bwd_dav/reference.cpp: the golden (accuracy.md): training_ops.md §4.5's
// chunk_kda_bwd_dav formulas in fp64, per (sequence, chunk, value head): dv_j = Σ_{i ≥ j}
// Aqk_ij do_i and dAqk_ij = scale (do_i · v_new_j) for j ≤ i, else 0; each output rounded once to
// its dtype. With p.plain, the double standard's plain baseline: the same loops with S = fp32
// (fp64 when do is fp64). Includes params.h and core only; shares no code with cpu/. Its element
// access is the goldens' own common/gdn_golden.h, which no cpu/ code includes.
#include <algorithm>

#include "ops/training/chunk_kda_bwd_dav/impls.h"
#include "ops/training/common/gdn_golden.h"

namespace recops::ops::chunk_kda_bwd_dav_ns {
namespace {
using training::golden::load;
using training::golden::offset_value;
using training::golden::store;

template <class S>
void golden(const Params& p) {
  const int64_t BT = p.BT, V = p.V, HV = p.HV;
  for (int64_t n = 0; n < p.N; ++n) {
    const int64_t b = p.seq_offsets ? 0 : n;
    const int64_t first = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n) : 0;
    const int64_t last = p.seq_offsets ? offset_value(p.seq_offsets, p.off_dtype, n + 1) : p.T;
    for (int64_t c0 = first; c0 < last; c0 += BT) {
      const int64_t L = std::min(BT, last - c0);
      for (int64_t hv = 0; hv < HV; ++hv) {
        auto row = [&](int64_t i) { return b * p.T + c0 + i; };
        auto vd = [&](int64_t i, int64_t d) { return (row(i) * HV + hv) * V + d; };
        auto ad = [&](int64_t i, int64_t j) { return (row(i) * HV + hv) * BT + j; };
        for (int64_t i = 0; i < L; ++i)
          for (int64_t j = 0; j < BT; ++j) {
            S s = 0;
            if (j <= i)
              for (int64_t d = 0; d < V; ++d)
                s += static_cast<S>(load(p.d_o, p.do_dtype, vd(i, d))) *
                     static_cast<S>(load(p.v_new, p.vn_dtype, vd(j, d)));
            p.dAqk[ad(i, j)] = static_cast<float>(j <= i ? static_cast<S>(p.scale) * s : S(0));
          }
        for (int64_t j = 0; j < L; ++j)
          for (int64_t d = 0; d < V; ++d) {
            S s = 0;
            for (int64_t i = j; i < L; ++i)
              s += static_cast<S>(load(p.Aqk, p.A_dtype, ad(i, j))) *
                   static_cast<S>(load(p.d_o, p.do_dtype, vd(i, d)));
            store(p.dv, p.do_dtype, vd(j, d), static_cast<double>(s));
          }
      }
    }
  }
}

}  // namespace

Status run_reference(const Params& p, const Context&) {
  if (!p.plain || p.do_dtype == DType::fp64)
    golden<double>(p);
  else
    golden<float>(p);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
