// hstu_attn/cuda/bwd_sm90.cuh: the Hopper backward (cuda_sm90): sm_90a wgmma, bf16 and fp16,
// d = dv = 64 or 128, the interval masks (causal / anti-causal / none, window, contexts, targets
// with group size, delta-q), GQA, silu_scale / attn_scale, any 16-byte aligned row strides (jagged
// or dense). It refuses the rest (rab, custom mask, func, paged KV, other head sizes) with a reason
// and cuda_sm80_fa / cuda_sm80 take over. Deterministic: no atomics, every output element has one
// owner summing in a fixed order. One instantiation per element type, head size and file
// (inst/bwd_sm90_*.cu). Below, the products are those of d = 128; at d = 64 the SS products
// take 4 k-steps and the RS ones are m64n64k16.
//
// The math is the plain recompute of bwd_fa.cuh (HSTU keeps no row statistics):
//   x = α S, S = Q Kᵀ;  P = M ⊙ SiLU(x);  G = M ⊙ SiLU'(x) ⊙ (dO Vᵀ) ⊙ s_i
//   dV = (s ⊙ P)ᵀ dO,  dK = α Gᵀ Q,  dQ = α G K,   SiLU'(x) = σ (1 + x (1 − σ)).
// σ = 0.5 + 0.5 tanh(x / 2): one MUFU op for SiLU and its derivative.
// Two kernels of two warpgroups (256 threads) each, on the caller's stream:
// 1. Key kernel (dK, dV): a CTA owns 128 keys of one (sequence, key head), 64 per warpgroup, K and
//    V resident in shared memory. It walks the query heads of the GQA group and their 64-row
//    query tiles between the bounds the window sets (both sides); a warpgroup whose keys no row of
//    a tile sees skips that tile's products. Per tile and warpgroup:
//      Sᵀ = K Qᵀ, dPᵀ = V dOᵀ   8 + 8 SS wgmma m64n64k16 (all operands K-major)
//      (s P)ᵀ, Gᵀ in registers   (the accumulator layout is the A fragment of an RS wgmma)
//      dV += (s P)ᵀ dO, dK += Gᵀ Q   4 + 4 RS wgmma m64n128k16 (dO and Q MN-major)
// 2. Query kernel (dQ): a CTA owns 128 query rows of one (sequence, query head), 64 per
//    warpgroup, Q and dO resident; 64-key tiles of K and V over the rows' key span stream
//    through: S = Q Kᵀ, dP = dO Vᵀ (SS m64n64), G in registers, dQ += G K (RS m64n128, K MN-major).
// Seven tile products against the five of an atomic dQ: the price of determinism. Loads are
// cp.async into the 128-byte swizzled layout (two stages of the streamed tiles; the next tile's
// copies run under the current tile's products); rows past a sequence are zero filled and masked.
// The mask: each query row's valid keys as two intervals (common.cuh: row_intervals); a
// warpgroup whose keys every row of the tile sees (key kernel), or a thread whose two rows see
// the whole key tile (query kernel), skips the element test.
// Work order: key tiles of one (sequence, key head) adjacent, first key tile (the most query
// tiles under a causal mask) first; query tiles last first. The standalone version of both kernels
// was bench/experiments/hstu_bwd_wgmma.cu (causal only, full length; removed after adoption, in git
// history).
#pragma once

#include <algorithm>
#include <climits>
#include <string>

#include "core/cuda/launch.h"
#include "core/cuda/sm90.cuh"
#include "ops/hstu/hstu_attn/cuda/common.cuh"
#include "ops/hstu/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

namespace sm90b {

constexpr int kThreads = tiles::kSm90BwdThreads;     // two warpgroups
constexpr int kBig = tiles::kSm90BwdResidentRows;    // resident rows (a CTA's keys / query rows)
constexpr int kSmall = tiles::kSm90BwdStreamedRows;  // rows of the streamed tiles
constexpr uint32_t kBigAtom = kBig * 128, kSmallAtom = kSmall * 128;  // bytes of a 64-col atom

// The tile sizes of head size D (d = dv = D: 64 or 128).
template <int D>
struct Shape {
  static_assert(D == 64 || D == 128, "d = dv = 64 or 128");
  static constexpr uint32_t kBigTile = D / 64 * kBigAtom, kSmallTile = D / 64 * kSmallAtom;
  // Two resident tiles, two stages of two streamed tiles, 1024-byte alignment slack.
  static constexpr int kSmemBytes = static_cast<int>(2 * kBigTile + 4 * kSmallTile) + 1024;
  static constexpr int kAcc = D / 2;  // accumulators per thread of a 64 x D product
};

// kRows rows of a [rows, D] matrix (row r at base + r * row_stride elements) into a swizzled
// tile at `dst` (D / 64 atoms of kRows x 64 elements); rows r >= nvalid are zero filled
// (`fallback` is any valid address, never read). With kCh = D / 8 chunks of 16 bytes per row,
// thread t copies the chunk c = t % kCh (chunks 0-7 go to atom 0, 8-15 to atom 1) of rows
// r0 + kRp k, r0 = t / kCh, kRp = 256 / kCh: a fixed trip count, one source step and a
// kRp * 128-byte destination step (kRp / 8 swizzle groups) per k. (A strided loop over
// t, t + 256, ... compiled to a branchy, address-heavy loop: the query kernel issued 647
// instructions per tile before its first wgmma, against 132 now.)
template <int kRows, int D>
__device__ __forceinline__ void load_rows(uint32_t dst, const void* base, int64_t row_stride,
                                          int nvalid, const void* fallback) {
  constexpr int kCh = D / 8, kRp = kThreads / kCh;
  static_assert(kThreads == 256 && kRows % kRp == 0 && kRp % 8 == 0, "whole passes");
  const int r0 = static_cast<int>(threadIdx.x) / kCh, c = static_cast<int>(threadIdx.x) % kCh;
  const uint32_t d0 = dst + (c / 8) * (kRows * 128) + core::cuda::sm90::sw128(r0, (c % 8) * 8);
  const char* src = static_cast<const char*>(base) + (r0 * row_stride + c * 8) * 2;
  const int64_t step = 2 * kRp * row_stride;  // kRp rows, in bytes
#pragma unroll
  for (int k = 0; k < kRows / kRp; ++k) {
    const bool ok = r0 + kRp * k < nvalid;
    core::cuda::cp_async16(d0 + k * kRp * 128,
                           ok ? static_cast<const void*>(src + k * step) : fallback, ok);
  }
}

// Issues the two 64 x 64 products of a warpgroup: acc_a = A1 B1ᵀ and acc_b = A2 B2ᵀ over d = D,
// A1 / A2 this warpgroup's 64 rows of a resident 128-row tile (byte offset a_row0 inside each
// atom), B1 / B2 streamed 64-row tiles; all K-major.
template <class T, int D>
__device__ __forceinline__ void two_products(float (&acc_a)[32], float (&acc_b)[32], uint32_t a1,
                                             uint32_t b1, uint32_t a2, uint32_t b2,
                                             uint32_t a_row0) {
  namespace wg = core::cuda::sm90;
  wg::wg_fence();
#pragma unroll
  for (int t = 0; t < D / 16; ++t) {
    const uint32_t oa = (t / 4) * kBigAtom + a_row0 + (t % 4) * 32;
    const uint32_t ob = (t / 4) * kSmallAtom + (t % 4) * 32;
    wg::wgmma_ss_n64<T>(acc_a, wg::make_desc(a1 + oa, 16, 1024), wg::make_desc(b1 + ob, 16, 1024),
                        t > 0 ? 1 : 0);
  }
#pragma unroll
  for (int t = 0; t < D / 16; ++t) {
    const uint32_t oa = (t / 4) * kBigAtom + a_row0 + (t % 4) * 32;
    const uint32_t ob = (t / 4) * kSmallAtom + (t % 4) * 32;
    wg::wgmma_ss_n64<T>(acc_b, wg::make_desc(a2 + oa, 16, 1024), wg::make_desc(b2 + ob, 16, 1024),
                        t > 0 ? 1 : 0);
  }
  wg::wg_commit();  // the caller waits (wg_wait<0>) before reading acc_a / acc_b
}

// The 32 accumulators of a 64 x 64 tile as the A fragments of the 4 k-steps of an RS wgmma.
template <class T>
__device__ __forceinline__ void to_frags(const float (&a)[32], uint32_t (&f)[4][4]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    f[i / 2][(i % 2) * 2 + 0] = pack2<T>(a[4 * i + 0], a[4 * i + 1]);
    f[i / 2][(i % 2) * 2 + 1] = pack2<T>(a[4 * i + 2], a[4 * i + 3]);
  }
}

// acc (64 x D) += F (64 x 64, fragments) · X, X a streamed 64-row tile read MN-major (its rows
// are the k dimension, its D columns the n dimension in D / 64 atoms).
template <class T, int D>
__device__ __forceinline__ void rs_product(float (&acc)[D / 2], const uint32_t (&f)[4][4],
                                           uint32_t tile) {
  namespace wg = core::cuda::sm90;
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    const uint64_t db = wg::make_desc(tile + t * 2048, kSmallAtom, 1024);
    if constexpr (D == 128)
      wg::wgmma_rs<T, 1>(acc, f[t], db, 1);
    else
      wg::wgmma_rs_n64<T, 1>(acc, f[t], db, 1);
  }
}

// σ(x) through tanh: 0.5 + 0.5 tanh(x / 2).
__device__ __forceinline__ float sigmoid_tanh(float x) {
  return fmaf(0.5f, sm90f::tanh_fast(0.5f * x), 0.5f);
}

}  // namespace sm90b

// ---- 1. key kernel (dK, dV) -------------------------------------------------------------------

template <class T, int D>
__global__ void __launch_bounds__(sm90b::kThreads, 1)
    hstu_bwd_sm90_kv_kernel(const __grid_constant__ P p, const int n_ktiles) {
#if RECOPS_SM90A
  using namespace sm90b;
  constexpr uint32_t kBigTile = Shape<D>::kBigTile, kSmallTile = Shape<D>::kSmallTile;
  constexpr int kAcc = Shape<D>::kAcc;
  namespace wg = core::cuda::sm90;
  extern __shared__ unsigned char smem_raw[];
  __shared__ RowIv s_iv[2][kSmall];  // the query rows' intervals, per stage
  __shared__ float s_sc[2][kSmall];  // the query rows' output scales, per stage
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sK = base, sV = base + kBigTile;
  // Stage st of the streamed tiles (arithmetic, not an array: a runtime index into a local array
  // puts it in local memory).
  auto sQ = [&](int st) { return base + 2 * kBigTile + st * 2 * kSmallTile; };
  auto sdO = [&](int st) { return base + 2 * kBigTile + st * 2 * kSmallTile + kSmallTile; };

  // Key tiles of one (sequence, key head) adjacent, first key tile first; key heads of one
  // sequence adjacent.
  const int64_t tile = static_cast<int64_t>(blockIdx.x) % n_ktiles;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / n_ktiles;
  const int b = static_cast<int>(bh / p.Hk), kh = static_cast<int>(bh % p.Hk);
  const int c0 = static_cast<int>(tile * kBig);
  // The sequence's description lives in shared memory: in registers it pushed the kernel (two
  // 64 x 128 accumulators) past 255 registers into spills.
  __shared__ Seq s_seq;
  {
    const Seq s0 = load_seq(p, b);
    if (c0 >= s0.Lk) return;  // the whole CTA, before any barrier
    if (threadIdx.x == 0) s_seq = s0;
  }
  __syncthreads();
  const Seq& s = s_seq;
  const int Lk = static_cast<int>(s.Lk), Lq = static_cast<int>(s.Lq);
  const int nk = min(kBig, Lk - c0);
  const int group = static_cast<int>(p.Hq / p.Hk);
  const float alpha = static_cast<float>(p.alpha);
  const int wgi = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;
  const int kw0 = c0 + wgi * 64;  // this warpgroup's first key

  load_rows<kBig, D>(
      sK, static_cast<const T*>(p.k) + b * p.k_batch + (s.k0 + c0) * p.k_row + kh * p.k_head,
      p.k_row, nk, p.k);
  load_rows<kBig, D>(
      sV, static_cast<const T*>(p.v) + b * p.v_batch + (s.k0 + c0) * p.v_row + kh * p.v_head,
      p.v_row, nk, p.v);

  // Work items u = (query head of the group, 64-row query tile qt_first + u % n_range). Without
  // context rows, query row i sees key c only if r - left <= c <= r + right (r = i + Lk - Lq):
  // the tiles of one head are bounded on both sides. Tiles inside the bounds that no row of them
  // sees still run (a warpgroup skips its products when none of its keys is seen); no block-wide
  // test per tile.
  const int nqt = (Lq + kSmall - 1) / kSmall;
  int qt_first = 0, qt_last = nqt - 1;
  if (s.C == 0 && p.window_right >= 0) {
    const int64_t i_min = c0 - p.window_right - (s.Lk - s.Lq);
    qt_first = static_cast<int>(clamp64(i_min, 0, s.Lq) / kSmall);
  }
  if (s.C == 0 && p.window_left >= 0) {
    const int64_t i_max = c0 + nk - 1 + p.window_left - (s.Lk - s.Lq);
    qt_last = i_max < 0 ? -1 : static_cast<int>(min64(i_max, s.Lq - 1) / kSmall);
  }
  const int n_range = max(qt_last - qt_first + 1, 0);
  const int n_items = group * n_range;  // below 2^31 (sm90_bwd_refusal)
  // Item u's Q and dO rows into stage st, its rows' intervals and scales beside them.
  auto load_item = [&](int u, int st) {
    const int64_t hq = static_cast<int64_t>(kh) * group + u / n_range;
    const int i0 = (qt_first + u % n_range) * kSmall;
    const int nq = min(kSmall, Lq - i0);
    load_rows<kSmall, D>(
        sQ(st), static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0) * p.q_row + hq * p.q_head,
        p.q_row, nq, p.q);
    load_rows<kSmall, D>(
        sdO(st),
        static_cast<const T*>(p.dout) + b * p.do_batch + (s.q0 + i0) * p.do_row + hq * p.do_head,
        p.do_row, nq, p.dout);
    if (threadIdx.x < kSmall) {
      s_iv[st][threadIdx.x] = row_intervals(p, s, i0 + threadIdx.x);
      s_sc[st][threadIdx.x] = threadIdx.x < nq ? row_scale(p, s, b, i0 + threadIdx.x) : 0.f;
    }
  };

  // The output scale s is applied per element before P and G are rounded to the element type
  // (per row with attn_scale): deferring a uniform silu_scale to the epilogue let fp16 G = SiLU'
  // dP overflow for large dout (loss-scaled fp16 training) where s G fits.
  const bool row_scales = p.attn_scale != nullptr;
  const float uniform = row_scales ? 1.f : static_cast<float>(p.silu_scale);
  if (n_items > 0) load_item(0, 0);
  core::cuda::cp_async_commit();

  float acc_k[kAcc], acc_v[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc_k[i] = acc_v[i] = 0.f;
  const int key_a = kw0 + warp * 16 + g;  // this thread's keys: key_a, key_a + 8
  const int kw1 = min(kw0 + 64, Lk);      // this warpgroup's keys inside the sequence: [kw0, kw1)
  for (int u = 0, st = 0; u < n_items; ++u, st ^= 1) {
    core::cuda::cp_async_wait<0>();
    wg::fence_proxy_async();
    __syncthreads();  // stage st is in place; everyone is done with the other one
    if (u + 1 < n_items) load_item(u + 1, st ^ 1);
    core::cuda::cp_async_commit();
    // Does some row of the tile see this warpgroup's keys, does every row see all of them? Each
    // warp votes alone over the 64 rows; the answer is the same in the four warps of a
    // warpgroup, so skipping its (warpgroup-wide) products is uniform.
    const RowIv va = s_iv[st][lane], vb = s_iv[st][lane + 32];
    const bool meets =
        __any_sync(0xffffffffu, kw0 < kw1 && (iv_meets(va, kw0, kw1) || iv_meets(vb, kw0, kw1)));
    if (!meets) continue;
    const bool whole = __all_sync(0xffffffffu, kw0 + 64 <= Lk && iv_covers(va, kw0, kw0 + 64) &&
                                                   iv_covers(vb, kw0, kw0 + 64));
    float s_t[32], dp_t[32];  // Sᵀ and dPᵀ: rows = keys, columns = query rows of the tile
    two_products<T, D>(s_t, dp_t, sK, sQ(st), sV, sdO(st), wgi * 8192);
    wg::wg_wait<0>();
    // P and G in straight passes (as in the forward): SiLU and SiLU' on all 32 pairs times the
    // uniform scale, the per-row scales only with attn_scale, the mask only when some row of the
    // tile does not see all of this warpgroup's keys.
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      const float x = alpha * s_t[i], sg = sigmoid_tanh(x);
      s_t[i] = x * sg * uniform;
      dp_t[i] *= sg * fmaf(x, 1.f - sg, 1.f) * uniform;
    }
    if (row_scales) {
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const float sc = s_sc[st][8 * (i / 4) + 2 * qd + (i % 2)];
        s_t[i] *= sc;
        dp_t[i] *= sc;
      }
    }
    if (!whole) {
      // Column by column (query row 8 i + 2 qd + c): one interval load serves both keys.
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const RowIv v = s_iv[st][8 * i + 2 * qd + c];
#pragma unroll
          for (int h = 0; h < 2; ++h)
            if (!iv_has(v, key_a + 8 * h)) {
              s_t[4 * i + 2 * h + c] = 0.f;
              dp_t[4 * i + 2 * h + c] = 0.f;
            }
        }
    }
    uint32_t pf[4][4], gf[4][4];
    to_frags<T>(s_t, pf);
    to_frags<T>(dp_t, gf);
    wg::wg_fence();
    rs_product<T, D>(acc_v, pf, sdO(st));  // dV += (s P)ᵀ dO
    rs_product<T, D>(acc_k, gf, sQ(st));   // dK += Gᵀ Q (α at the end)
    wg::wg_commit();
    wg::wg_wait<0>();
  }
  core::cuda::cp_async_wait<0>();

  // dK = α acc_k, dV = acc_v for the CTA's keys inside the sequence.
  const float ka = alpha;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int key = key_a + 8 * u;
    if (key >= Lk) continue;
    T* dkr = static_cast<T*>(p.dk) + b * p.dk_batch + (s.k0 + key) * p.dk_row + kh * p.dk_head;
    T* dvr = static_cast<T*>(p.dv_out) + b * p.dv_batch + (s.k0 + key) * p.dv_row + kh * p.dv_head;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      *reinterpret_cast<uint32_t*>(dkr + 8 * j + 2 * qd) =
          pack2<T>(ka * acc_k[4 * j + 2 * u], ka * acc_k[4 * j + 2 * u + 1]);
      *reinterpret_cast<uint32_t*>(dvr + 8 * j + 2 * qd) =
          pack2<T>(acc_v[4 * j + 2 * u], acc_v[4 * j + 2 * u + 1]);
    }
  }
#endif
}

// ---- 2. query kernel (dQ) ---------------------------------------------------------------------

template <class T, int D>
__global__ void __launch_bounds__(sm90b::kThreads, 1)
    hstu_bwd_sm90_q_kernel(const __grid_constant__ P p, const int n_qtiles) {
#if RECOPS_SM90A
  using namespace sm90b;
  constexpr uint32_t kBigTile = Shape<D>::kBigTile, kSmallTile = Shape<D>::kSmallTile;
  constexpr int kAcc = Shape<D>::kAcc;
  namespace wg = core::cuda::sm90;
  extern __shared__ unsigned char smem_raw[];
  __shared__ int s_lo, s_hi;
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base, sdO = base + kBigTile;
  auto sK = [&](int st) { return base + 2 * kBigTile + st * 2 * kSmallTile; };
  auto sV = [&](int st) { return base + 2 * kBigTile + st * 2 * kSmallTile + kSmallTile; };

  // Query tiles of one (sequence, query head) adjacent, last tile (the longest causal rows)
  // first; query heads of one sequence adjacent.
  const int64_t tile = n_qtiles - 1 - static_cast<int64_t>(blockIdx.x) % n_qtiles;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / n_qtiles;
  const int64_t b = bh / p.Hq, hq = bh % p.Hq;
  const Seq s = load_seq(p, b);
  const int i0 = static_cast<int>(tile * kBig);
  if (i0 >= s.Lq) return;  // the whole CTA, before any barrier
  const int Lk = static_cast<int>(s.Lk), Lq = static_cast<int>(s.Lq);
  const int nq = min(kBig, Lq - i0);
  const int64_t kh = hq / (p.Hq / p.Hk);
  const float alpha = static_cast<float>(p.alpha);
  const int wgi = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;

  if (threadIdx.x == 0) {
    s_lo = INT_MAX;
    s_hi = 0;
  }
  __syncthreads();
  // The CTA's key span: the union of its rows' intervals.
  if (threadIdx.x < kBig) span_add_row(p, s, i0 + threadIdx.x, &s_lo, &s_hi);
  __syncthreads();
  const int t_lo = s_lo < s_hi ? s_lo / kSmall : 0;
  const int n_tiles = s_lo < s_hi ? (s_hi + kSmall - 1) / kSmall - t_lo : 0;

  const T* kbase = static_cast<const T*>(p.k) + b * p.k_batch + s.k0 * p.k_row + kh * p.k_head;
  const T* vbase = static_cast<const T*>(p.v) + b * p.v_batch + s.k0 * p.v_row + kh * p.v_head;
  auto load_kv = [&](int n, int st) {
    const int c = (t_lo + n) * kSmall;
    load_rows<kSmall, D>(sK(st), kbase + static_cast<int64_t>(c) * p.k_row, p.k_row, Lk - c, p.k);
    load_rows<kSmall, D>(sV(st), vbase + static_cast<int64_t>(c) * p.v_row, p.v_row, Lk - c, p.v);
  };
  float acc_q[kAcc];
#pragma unroll
  for (int i = 0; i < kAcc; ++i) acc_q[i] = 0.f;
  const int ra = i0 + wgi * 64 + warp * 16 + g;  // this thread's rows: ra and ra + 8
  if (n_tiles > 0) {
    load_rows<kBig, D>(
        sQ, static_cast<const T*>(p.q) + b * p.q_batch + (s.q0 + i0) * p.q_row + hq * p.q_head,
        p.q_row, nq, p.q);
    load_rows<kBig, D>(
        sdO,
        static_cast<const T*>(p.dout) + b * p.do_batch + (s.q0 + i0) * p.do_row + hq * p.do_head,
        p.do_row, nq, p.dout);
    load_kv(0, 0);
    core::cuda::cp_async_commit();
    const RowIv iv[2] = {row_intervals(p, s, ra), row_intervals(p, s, ra + 8)};
    float rs[2];
#pragma unroll
    for (int u = 0; u < 2; ++u) rs[u] = ra + 8 * u < Lq ? row_scale(p, s, b, ra + 8 * u) : 0.f;
    for (int n = 0; n < n_tiles; ++n) {
      const int st = n & 1;
      core::cuda::cp_async_wait<0>();
      wg::fence_proxy_async();
      __syncthreads();  // tile n is in place; everyone is done with the other stage
      if (n + 1 < n_tiles) load_kv(n + 1, st ^ 1);
      core::cuda::cp_async_commit();

      float s_a[32], dp_a[32];  // S and dP: rows = this warpgroup's query rows, columns = keys
      two_products<T, D>(s_a, dp_a, sQ, sK(st), sdO, sV(st), wgi * 8192);
      const int c0 = (t_lo + n) * kSmall;
      const bool whole = c0 + kSmall <= Lk && iv_covers(iv[0], c0, c0 + kSmall) &&
                         iv_covers(iv[1], c0, c0 + kSmall);
      wg::wg_wait<0>();
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const float x = alpha * s_a[i], sg = sigmoid_tanh(x);
        dp_a[i] *= sg * fmaf(x, 1.f - sg, 1.f) * rs[(i % 4) / 2];
      }
      if (!whole) {
#pragma unroll
        for (int i = 0; i < 32; ++i)
          if (!iv_has(iv[(i % 4) / 2], c0 + 8 * (i / 4) + 2 * qd + (i % 2))) dp_a[i] = 0.f;
      }
      uint32_t gf[4][4];
      to_frags<T>(dp_a, gf);
      wg::wg_fence();
      rs_product<T, D>(acc_q, gf, sK(st));  // dQ += G K (α at the end)
      wg::wg_commit();
      wg::wg_wait<0>();
    }
    core::cuda::cp_async_wait<0>();
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int row = ra + 8 * u;
    if (row >= Lq) continue;
    T* dqr = static_cast<T*>(p.dq) + b * p.dq_batch + (s.q0 + row) * p.dq_row + hq * p.dq_head;
#pragma unroll
    for (int j = 0; j < D / 8; ++j)
      *reinterpret_cast<uint32_t*>(dqr + 8 * j + 2 * qd) =
          pack2<T>(alpha * acc_q[4 * j + 2 * u], alpha * acc_q[4 * j + 2 * u + 1]);
  }
#endif
}

// Why the Hopper backward cannot run this problem (empty: it can).
inline std::string sm90_bwd_refusal(const P& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16)
    return "cuda_sm90 runs bf16 and fp16 (fp32 runs on cuda_sm80)";
  if (p.d != p.dv || (p.d != 64 && p.d != 128))
    return detail::cat("cuda_sm90's backward needs d = dv = 64 or 128 (got d=", p.d, ", dv=", p.dv,
                       "); cuda_sm80_fa / cuda_sm80 run the rest");
  if (p.mask || p.func) return "cuda_sm90 takes interval masks only (no custom mask, no func)";
  if (p.rab) return "cuda_sm90 has no rab yet; cuda_sm80_fa runs it";
  if (p.kv_cache) return "cuda_sm90 has no paged KV";
  if (p.Sq > (INT_MAX >> 1) || p.Sk > (INT_MAX >> 1))
    return "cuda_sm90 needs sequence lengths below 2^30";
  if ((p.Hq / std::max<int64_t>(p.Hk, 1)) * ((p.Sq + sm90b::kSmall - 1) / sm90b::kSmall) >= INT_MAX)
    return "cuda_sm90 needs (Hq / Hk) x (64-row query tiles) below 2^31";
  if (!bwd_rows_aligned16(p))
    return "cuda_sm90 needs 16-byte aligned rows of q, k, v, dout, dq, dk, dv";
  return {};
}

// The backward at head size D = p.d = p.dv. It trusts the dispatch: its only caller is
// hstu_attn_bwd_cuda_sm90 (launch.cu), which core::dispatch runs right after
// hstu_attn_bwd_sm90_accepts accepted these params (sm90_bwd_refusal, the sm_90a image), and which
// picks D from p.d; so the accept test runs once per call. A new caller must run
// sm90_bwd_refusal first: the 16-byte copies and stores and the int work counts rely on every
// condition it checks.
template <class T, int D>
Status run_bwd_sm90(const P& p, const Context& ctx) {
  constexpr const char* kOp = "hstu_attn_bwd";
  const int64_t n_ktiles = (p.Sk + sm90b::kBig - 1) / sm90b::kBig;
  const int64_t n_qtiles = (p.Sq + sm90b::kBig - 1) / sm90b::kBig;
  const int64_t gk = n_ktiles * p.B * p.Hk, gq = n_qtiles * p.B * p.Hq;
  if (gk > INT_MAX || gq > INT_MAX)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm90 grid too large (", gq, " blocks)"));
  if (gk > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
        kOp, (hstu_bwd_sm90_kv_kernel<T, D>), dim3(static_cast<unsigned>(gk)),
        dim3(sm90b::kThreads), static_cast<size_t>(sm90b::Shape<D>::kSmemBytes), ctx.stream, p,
        static_cast<int>(n_ktiles)));
  if (gq > 0)
    RECOPS_RETURN_IF_ERROR(RECOPS_LAUNCH_KERNEL(
        kOp, (hstu_bwd_sm90_q_kernel<T, D>), dim3(static_cast<unsigned>(gq)), dim3(sm90b::kThreads),
        static_cast<size_t>(sm90b::Shape<D>::kSmemBytes), ctx.stream, p,
        static_cast<int>(n_qtiles)));
  return Status::Ok();
}

}  // namespace recops::ops::hstu_cuda
