// stem_indexer/cuda/score_sm90.cu: the scoring GEMM of cuda_sm90 (sm_90a: TMA + wgmma).
//
// The scores of one (batch, KV head) section are G products [Qmax, Df] x [Df, Kmax] (one per query
// head of the group), of which a causal problem needs only the pairs (i, j) with j < V(i): about
// half. A CTA computes the 128 x 128 tile (query blocks i0 .. i0+127, key blocks j0 .. j0+127) of
// two heads of the group, which share the K slices: 1.5 bytes of shared-memory fill per 2 of the
// one-head tile, so the kernel leans less on L2 (one head per CTA ran at 480 TFLOP/s of useful
// work, L2-bound). Only tiles holding a visible pair exist in the grid: for m-tile mt the host
// counts the n-tiles below the largest V of the tile's last row over the batches (from the host
// lengths when the value checks read them, else every n-tile), and the CTA returns at once when
// its own batch sees none of its keys: 28 of the 64 tiles of a 1024-block head are skipped.
//
// Grid order: section, m-tile, head pair, n-tile (fastest), so the CTAs running at one time share
// their Q tiles and the section's K in L2; every tile does the same work.
//
// A CTA is three warpgroups. Warpgroup 0, the producer: one thread issues the TMA loads of the
// 64-element k-slices (128-byte swizzle, zeros past Df and past the tensors' rows) of the two Q
// tiles and the K tile into four stages ("full" / "empty" mbarriers, the latter with one arrival
// per consumer warp); its registers go to the consumers (setmaxnreg). Warpgroups 1 and 2: one
// head each, its 128 rows as two m64n128k16 SS wgmma chains (both operands K-major, 128 fp32
// accumulators per thread), one group of slices in flight. The epilogue forms
// S = fl32(fl32(acc · 1/R²) + vbias_j) (no contraction, as the reference) and stores the rank key
// of §3.2 step 5 (fp32 or bf16 precision) into the row's slot j: the 8-byte stores of a quad cover
// 32 contiguous bytes. An odd group's last pair computes a second head it does not store.
#include "ops/stem/indexer/cuda/score_sm90.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/cuda/launch.h"
#include "core/cuda/mma.cuh"
#include "core/cuda/runtime.h"
#include "core/cuda/sm90.cuh"
#include "core/cuda/tma.h"
#include "ops/stem/indexer/cuda/lengths.cuh"
#include "ops/stem/common/stem_rules.h"

namespace recops::ops::stem_sm90 {
namespace {

constexpr const char* kOp = "stem_indexer";
constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 4, kThreads = 384;
constexpr int kHeads = 2;                   // query heads of the group per CTA (one per consumer)
constexpr uint32_t kSlice = kBM * kBK * 2;  // 16 KiB: 128 rows x 64 elements, swizzled
constexpr uint32_t kStage = (kHeads + 1) * kSlice;   // the Q slices of the two heads, the K slice
constexpr int kSmemBytes = kStages * kStage + 1024;  // + 1024-byte alignment slack
constexpr int kMaxMTiles = 256;                      // Qmax <= 32768 query blocks (4M tokens)
constexpr int kConsumerWarps = 8;
static_assert(kBM == kBN, "the TMA boxes have the same row count");

// vbias, the lengths, sizes and rules: stem_cuda::ScoreCommon (lengths.cuh).
struct ScoreArgs : stem_cuda::ScoreCommon {
  uint32_t* keys;  // sparse_indices, [B, Nq, Qmax, Kmax]
  bool vec_out;    // 8-byte stores (Kmax even, base 8-byte aligned)
  int m_tiles;
  int64_t tiles_per_section;
  int64_t pairs;  // ceil(G / kHeads): CTAs per (m-tile, n-tile) of a section
  // The section's tiles of m-tiles < mt: pairs · Σ n-tiles (offset[m_tiles] = tiles_per_section).
  int32_t offset[kMaxMTiles + 1];
};

struct Maps {
  core::cuda::TensorMap q, k;
};

__global__ void __launch_bounds__(kThreads, 1)
    score_sm90_kernel(const __grid_constant__ ScoreArgs a, const __grid_constant__ Maps m) {
#if RECOPS_SM90A
  namespace wg = core::cuda::sm90;
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t bars[2 * kStages];
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  auto sQ = [&](int st, int h) { return base + kStage * st + kSlice * h; };
  auto sK = [&](int st) { return base + kStage * st + kHeads * kSlice; };
  auto full_bar = [&](int st) { return core::cuda::smem_u32(&bars[st]); };
  auto empty_bar = [&](int st) { return core::cuda::smem_u32(&bars[kStages + st]); };

  // ---- the tile: section, m-tile (offset[mt] <= u < offset[mt + 1]), head pair, n-tile ----
  const int64_t sec = static_cast<int64_t>(blockIdx.x) / a.tiles_per_section;
  const int u = static_cast<int>(static_cast<int64_t>(blockIdx.x) % a.tiles_per_section);
  int lo = 0, hi = a.m_tiles;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (a.offset[mid] <= u)
      lo = mid;
    else
      hi = mid;
  }
  const int mt = lo;
  const int n_count = (a.offset[mt + 1] - a.offset[mt]) / static_cast<int>(a.pairs);
  const int gp = (u - a.offset[mt]) / n_count, nt = (u - a.offset[mt]) % n_count;
  const int64_t b = sec / a.Nk, hk = sec % a.Nk;
  const stem::StemRules& r = a.rules;
  const stem_cuda::Lengths len = stem_cuda::batch_lengths(a.lens, b, a.Qmax * r.Bs, a.Kmax * r.Bs);
  const stem::BatchRules br = stem::batch_rules(r, len.q, len.k, len.p);
  const int i0 = mt * kBM, j0 = nt * kBN;
  if (i0 >= br.Qb) return;  // the whole CTA, before any barrier
  const int64_t i_last = i0 + kBM - 1 < br.Qb ? i0 + kBM - 1 : br.Qb - 1;
  if (j0 >= stem::visible_blocks(r, br, i_last)) return;

  if (threadIdx.x == 0) {
    for (int st = 0; st < kStages; ++st) {
      wg::mbar_init(full_bar(st), 1);
      wg::mbar_init(empty_bar(st), kConsumerWarps);
    }
    wg::mbar_fence_init();
  }
  __syncthreads();
  const int nk = static_cast<int>((a.Df + kBK - 1) / kBK);
  const int wgi = threadIdx.x / 128;

  if (wgi == 0) {  // ---- producer: one thread issues the TMA loads ----
    wg::regs_dealloc<40>();
    if (threadIdx.x == 0) {
      wg::tma_prefetch_desc(&m.q);
      wg::tma_prefetch_desc(&m.k);
      // The second head of an odd group's last pair reads another head's rows (or zeros past
      // the tensor); its consumer stores nothing.
      const int qh = static_cast<int>(b * a.Nq + hk * a.G + gp * kHeads);
      const int kh = static_cast<int>(b * a.Nk + hk);
      for (int k = 0; k < nk; ++k) {
        const int st = k % kStages;
        if (k >= kStages) wg::mbar_wait(empty_bar(st), ((k / kStages) - 1) & 1);
        wg::mbar_arrive_expect_tx(full_bar(st), kStage);
        for (int h = 0; h < kHeads; ++h)
          wg::tma_load_3d(sQ(st, h), &m.q, full_bar(st), k * kBK, qh + h, i0);
        wg::tma_load_3d(sK(st), &m.k, full_bar(st), k * kBK, kh, j0);
      }
    }
    return;
  }

  // ---- consumers: warpgroup w multiplies head gp·2 + w - 1's 128 rows by the 128 keys ----
  wg::regs_alloc<232>();
  const int h = wgi - 1;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int quad = lane % 4;
  // This thread's columns j0 + 8n + 2·quad + e: their vbias, loaded before the main loop (the
  // epilogue would otherwise wait on them).
  float vbv[kBN / 8][2];
  {
    const float* vb = a.vbias + b * a.vs0 + hk * a.vs1;
#pragma unroll
    for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int64_t j = j0 + 8 * n + 2 * quad + e;
        vbv[n][e] = j < a.Kmax ? vb[j * a.vs2] : 0.f;
      }
  }
  float acc0[64], acc1[64];  // rows 0-63 and 64-127 of the tile
#pragma unroll
  for (int x = 0; x < 64; ++x) {
    acc0[x] = 0.f;
    acc1[x] = 0.f;
  }
  for (int k = 0; k < nk; ++k) {
    const int st = k % kStages;
    wg::mbar_wait(full_bar(st), (k / kStages) & 1);
    wg::wg_fence();
#pragma unroll
    for (int t = 0; t < kBK / 16; ++t) {
      const uint64_t db = wg::make_desc(sK(st) + t * 32, 16, 1024);
      wg::wgmma_ss<__nv_bfloat16, 0>(acc0, wg::make_desc(sQ(st, h) + t * 32, 16, 1024), db,
                                     k > 0 || t > 0 ? 1 : 0);
      wg::wgmma_ss<__nv_bfloat16, 0>(acc1, wg::make_desc(sQ(st, h) + 8192 + t * 32, 16, 1024), db,
                                     k > 0 || t > 0 ? 1 : 0);
    }
    wg::wg_commit();
    wg::wg_wait<1>();  // the wgmma of slice k - 1 is done: its stage may be refilled
    if (k > 0 && lane == 0) wg::mbar_arrive(empty_bar((k - 1) % kStages));
  }
  wg::wg_wait<0>();
  const int g = gp * kHeads + h;
  if (g >= a.G) return;

  // ---- epilogue: rank keys into the rows' slots ----
  const int64_t hq = hk * a.G + g;
  // Whole tile inside the tensors with 8-byte stores: no per-element bounds (the common case).
  const bool whole = i0 + kBM <= a.Qmax && j0 + kBN <= a.Kmax && a.vec_out;
  auto store = [&](const float(&acc)[64], int row_base, auto precision) {
    constexpr int P = decltype(precision)::value;
    auto key = [&](float x, float bias) {
      return stem::rank_key_short<P>(__fadd_rn(__fmul_rn(x, a.inv_r2), bias));
    };
#pragma unroll
    for (int e2 = 0; e2 < 2; ++e2) {
      const int64_t i = i0 + row_base + warp * 16 + lane / 4 + 8 * e2;
      uint32_t* row = a.keys + ((b * a.Nq + hq) * a.Qmax + i) * a.Kmax + j0 + 2 * quad;
      if (whole) {
#pragma unroll
        for (int n = 0; n < kBN / 8; ++n)
          *reinterpret_cast<uint2*>(row + 8 * n) = make_uint2(
              key(acc[4 * n + 2 * e2], vbv[n][0]), key(acc[4 * n + 2 * e2 + 1], vbv[n][1]));
        continue;
      }
      if (i >= a.Qmax) continue;
#pragma unroll
      for (int n = 0; n < kBN / 8; ++n)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (j0 + 8 * n + 2 * quad + e < a.Kmax)
            row[8 * n + e] = key(acc[4 * n + 2 * e2 + e], vbv[n][e]);
    }
  };
  if (a.precision == 2) {
    store(acc0, 0, std::integral_constant<int, 2>{});
    store(acc1, 64, std::integral_constant<int, 2>{});
  } else {
    store(acc0, 0, std::integral_constant<int, 1>{});
    store(acc1, 64, std::integral_constant<int, 1>{});
  }
#endif
}

bool aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

}  // namespace

std::string score_sm90_reason(const StemIndexerParams& p) {
  const std::string pre = "recops.stem_indexer: cuda_sm90 ";
  if (stem::ceil_div(p.Qmax, kBM) > kMaxMTiles)
    return pre + "takes at most " + std::to_string(kMaxMTiles * kBM) +
           " query blocks (Qmax=" + std::to_string(p.Qmax) + "; cuda_sm80 runs more)";
  if (p.Qmax > INT32_MAX - kBM || p.Kmax > INT32_MAX - kBN || p.B * p.Nq > INT32_MAX ||
      p.Df > INT32_MAX - kBK)
    return pre + "needs Qmax, Kmax, Df and B·Nq below 2^31";
  if (p.Df < 1) return pre + "needs Df >= 1";
  bool ok = aligned16(p.qflat) && aligned16(p.kflat);
  for (int d = 1; d < 3; ++d)
    ok = ok && p.q_stride[d] > 0 && p.k_stride[d] > 0 && p.q_stride[d] % 8 == 0 &&
         p.k_stride[d] % 8 == 0;
  if (!ok)
    return pre +
           "needs 16-byte aligned qflat/kflat (base pointers, head and block strides multiples "
           "of 8 elements, nonzero)";
  if (p.B > 1 && (p.q_stride[0] != p.Nq * p.q_stride[1] || p.k_stride[0] != p.Nk * p.k_stride[1]))
    return pre + "needs the batch stride of qflat/kflat to equal heads x head stride";
  const std::string why = core::cuda::sm90a_reason(
      p.device_index, core::cuda::kernel_binary_version(
                          reinterpret_cast<const void*>(score_sm90_kernel), p.device_index));
  return why.empty() ? why : pre + why;
}

Status score_sm90(const StemIndexerParams& p, const Context& ctx) {
  ScoreArgs a{};
  stem_cuda::set_score_common(p, &a);
  a.keys = reinterpret_cast<uint32_t*>(p.indices);
  a.vec_out = p.Kmax % 2 == 0 && (reinterpret_cast<uintptr_t>(p.indices) & 7u) == 0;
  const int64_t m_tiles = stem::ceil_div(p.Qmax, kBM), n_tiles = stem::ceil_div(p.Kmax, kBN);
  if (m_tiles > kMaxMTiles) return Status(StatusCode::not_implemented, score_sm90_reason(p));
  a.m_tiles = static_cast<int>(m_tiles);
  const bool host_lens =
      static_cast<int64_t>(p.Lq.size()) == p.B && static_cast<int64_t>(p.Lk.size()) == p.B;
  a.pairs = (p.G + kHeads - 1) / kHeads;
  a.offset[0] = 0;
  for (int64_t mt = 0; mt < m_tiles; ++mt) {
    int64_t n = n_tiles;
    if (host_lens) {
      // V is non-decreasing below Qb and 0 from Qb on: each batch's bound is its last row in the
      // m-tile below Qb.
      int64_t v = 0;
      for (int64_t b = 0; b < p.B; ++b) {
        const int64_t lp = p.Lp.empty() ? p.Lk[b] : p.Lp[b];
        const int64_t last = std::min((mt + 1) * kBM, stem::ceil_div(p.Lq[b], p.rules.Bs)) - 1;
        if (last >= mt * kBM)
          v = std::max(v, stem::visible_blocks(p.rules, p.Lq[b], p.Lk[b], lp, last));
      }
      n = std::min(n_tiles, stem::ceil_div(v, kBN));
    }
    const int64_t next = a.offset[mt] + a.pairs * n;
    if (next > INT32_MAX)
      return Status(StatusCode::not_implemented, "recops.stem_indexer: cuda_sm90 too many tiles");
    a.offset[mt + 1] = static_cast<int32_t>(next);
  }
  a.tiles_per_section = a.offset[m_tiles];
  const int64_t grid = p.B * p.Nk * a.tiles_per_section;
  if (grid == 0) return Status::Ok();
  if (grid > INT32_MAX)
    return Status(StatusCode::not_implemented, "recops.stem_indexer: cuda_sm90 grid too large");
  Maps m{};
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(&m.q, p.qflat, p.Df, p.B * p.Nq, p.Qmax,
                                                            2 * p.q_stride[1], 2 * p.q_stride[2],
                                                            kBM, "recops.stem_indexer: qflat"));
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(&m.k, p.kflat, p.Df, p.B * p.Nk, p.Kmax,
                                                            2 * p.k_stride[1], 2 * p.k_stride[2],
                                                            kBN, "recops.stem_indexer: kflat"));
  return RECOPS_LAUNCH_KERNEL(kOp, score_sm90_kernel, dim3(static_cast<unsigned>(grid)),
                              dim3(kThreads), static_cast<size_t>(kSmemBytes), ctx.stream, a, m);
}

}  // namespace recops::ops::stem_sm90
