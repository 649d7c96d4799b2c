// training/chunk_kda_bwd_dav/cpu/chunk_kda_bwd_dav_cpu.cpp: the optimized CPU path. Work items are
// (chunk, value head hv), split statically over the threads; each output element comes from one
// item, so results do not depend on the thread count. Per item the chunk's do and v_new rows and
// the lower part of its Aqk block are widened once; dAqk_ij = scale (do_i · v_new_j) (j ≤ i) by
// V-long dots with 8 independent partial sums; dv_j = Σ_{i ≥ j} Aqk_ij do_i as row axpys into
// one accumulator row (vectorisable). Arithmetic: fp32 (fp64 when do is fp64), like the double
// standard's plain baseline.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "ops/training/chunk_kda_bwd_dav/impls.h"
#include "ops/training/common/gdn_cpu.h"
#include "ops/training/common/packed_offsets.h"

namespace recops::ops::chunk_kda_bwd_dav_ns {
namespace {
using training::gdn_cpu::load_as;
using training::gdn_cpu::store_as;

// Σ_d a[d]·b[d] with 8 independent partial sums (combined pairwise at the end).
template <class S>
S dot(const S* __restrict a, const S* __restrict b, int64_t n) {
  S part[8] = {};
  int64_t d = 0;
  for (; d + 8 <= n; d += 8)
    for (int l = 0; l < 8; ++l) part[l] += a[d + l] * b[d + l];
  for (int l = 0; d < n; ++d, ++l) part[l] += a[d] * b[d];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

template <class S>
struct Scratch {
  std::vector<S> d_o, vn, a, acc;
  Scratch(int64_t BT, int64_t V)
      : d_o(static_cast<size_t>(BT * V)),
        vn(static_cast<size_t>(BT * V)),
        a(static_cast<size_t>(BT * BT)),
        acc(static_cast<size_t>(V)) {}
};

template <class S>
void item(const Params& p, const training::TimeChunk& ch, int64_t hv, Scratch<S>& s) {
  const int64_t HV = p.HV, V = p.V, BT = p.BT, R = ch.rows;
  for (int64_t i = 0; i < R; ++i) {
    const int64_t o = ((ch.row0 + i) * HV + hv) * V;
    for (int64_t d = 0; d < V; ++d) {
      s.d_o[i * V + d] = load_as<S>(p.d_o, p.do_dtype, o + d);
      s.vn[i * V + d] = load_as<S>(p.v_new, p.vn_dtype, o + d);
    }
    const int64_t oa = ((ch.row0 + i) * HV + hv) * BT;
    for (int64_t j = 0; j <= i; ++j) s.a[i * BT + j] = load_as<S>(p.Aqk, p.A_dtype, oa + j);
  }
  const S scale = static_cast<S>(p.scale);
  for (int64_t i = 0; i < R; ++i) {
    float* out = p.dAqk + ((ch.row0 + i) * HV + hv) * BT;
    for (int64_t j = 0; j <= i; ++j)
      out[j] = static_cast<float>(scale * dot(s.d_o.data() + i * V, s.vn.data() + j * V, V));
    for (int64_t j = i + 1; j < BT; ++j) out[j] = 0.0f;
  }
  for (int64_t j = 0; j < R; ++j) {
    S* __restrict acc = s.acc.data();
    std::fill(acc, acc + V, S(0));
    for (int64_t i = j; i < R; ++i) {
      const S a = s.a[i * BT + j];
      const S* __restrict x = s.d_o.data() + i * V;
      for (int64_t d = 0; d < V; ++d) acc[d] += a * x[d];
    }
    const int64_t o = ((ch.row0 + j) * HV + hv) * V;
    for (int64_t d = 0; d < V; ++d) store_as<S>(p.dv, p.do_dtype, o + d, acc[d]);
  }
}

template <class S>
void apply(const Params& p, const std::vector<training::TimeChunk>& chunks, int threads) {
  const int64_t items = static_cast<int64_t>(chunks.size()) * p.HV;
  core::parallel_for(items, 1, threads, [&](int64_t begin, int64_t end) {
    Scratch<S> s(p.BT, p.V);
    for (int64_t it = begin; it < end; ++it)
      item<S>(p, chunks[static_cast<size_t>(it / p.HV)], it % p.HV, s);
  });
}

}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (p.HV == 0) return Status::Ok();
  const std::vector<training::TimeChunk> chunks =
      training::time_chunks(p.T, p.BT, p.N, p.seq_offsets, p.off_dtype);
  if (p.do_dtype == DType::fp64)
    apply<double>(p, chunks, ctx.num_threads);
  else
    apply<float>(p, chunks, ctx.num_threads);
  return Status::Ok();
}

}  // namespace recops::ops::chunk_kda_bwd_dav_ns
