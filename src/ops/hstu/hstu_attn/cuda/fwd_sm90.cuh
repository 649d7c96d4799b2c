// hstu_attn/cuda/fwd_sm90.cuh: the Hopper forward (cuda_sm90): sm_90a, bf16 and fp16,
// d = dv ∈ {64, 128, 256}, the interval masks (causal / anti-causal / none, window, contexts,
// targets with group size, delta-q), rab and custom mask tensors (per head or broadcast, any
// strides; a bool mask or one in the dtype), GQA, silu_scale / attn_scale, jagged or contiguous
// dense layouts. It refuses the rest (func, paged KV, other head sizes) with a reason and
// cuda_sm80_fa / cuda_sm80 take over. One instantiation per element type, head size and file
// (inst/fwd_sm90_*.cu), each with four kernels: with or without rab, with or without a mask.
//
// Warp-specialised, FlashAttention-3 shaped, without the softmax bookkeeping (HSTU has none).
// A CTA owns 128 query rows of one (sequence, query head): three warpgroups,
//   warpgroup 0, the producer: one thread issues TMA loads (Q once; K and V key tiles of kBN rows
//     into a kStages-deep ring of shared-memory stages, each guarded by a "full" mbarrier that
//     the TMA completes and an "empty" mbarrier the consumers' warps arrive on); its registers
//     are given to the consumers (setmaxnreg);
//   warpgroups 1 and 2, the consumers: 64 query rows each. Per key tile (d = 128: kBN = 128),
//     S  = Q Kᵀ            8 SS wgmma m64n128k16 (Q and K K-major, 128-byte swizzled by the TMA)
//     P  = M ⊙ SiLU(α S)   in registers (the accumulator layout is the A fragment of an RS wgmma;
//                          with rab, α (S + rab): the tile's rab is loaded into P's registers
//                          while its S products run; a custom mask is loaded then too, as bits)
//     O += P V             8 RS wgmma m64n128k16 (V MN-major: the transpose bit)
//   d = 64: the same tiles, P V as 8 RS m64n64k16, 4 stages (a tile is half as large);
//   d = 256: key tiles of kBN = 64 (two stages of K and V with Q fill 192 KiB): S as 16 SS
//     m64n64k16, O (64 x 256 per warpgroup, 128 registers a thread) as two halves of 128 columns,
//     each 4 RS m64n128k16 per tile.
//   software-pipelined inside the warpgroup: the S of tile n + 1 and the P V of tile n are both
//   issued before the SiLU of tile n + 1 is computed, so the tensor cores work while the SiLU
//   runs; the other consumer warpgroup fills the remaining gaps.
// SiLU(x) = h + h tanh(h), h = x / 2: one MUFU op (tanh.approx.f32) instead of two (ex2, rcp).
// The mask comes from each row's valid key intervals (common.cuh: row_intervals); a thread whose
// two rows cover a whole tile skips the element test. The CTA's key tiles are those of its rows'
// key span. CTAs run the last query tiles of every sequence first (the longest causal rows:
// longest-processing-time order, also for skewed jagged batches); heads of one sequence are
// adjacent (GQA groups share K/V in L2).
#pragma once

#include <algorithm>
#include <climits>
#include <string>

#include "core/cuda/launch.h"
#include "core/cuda/sm90.cuh"
#include "core/cuda/tma.h"
#include "ops/hstu/hstu_attn/cuda/common.cuh"
#include "ops/hstu/hstu_attn/cuda/tiles.h"
#include "recops/context.h"

namespace recops::ops::hstu_cuda {

namespace sm90f {

constexpr int kBM = tiles::kSm90FwdRows;          // query rows per CTA
constexpr int kThreads = tiles::kSm90FwdThreads;  // producer + two consumer warpgroups
constexpr int kConsumerWarps = 8;                 // arrivals on an "empty" barrier

// The tile shapes of head size D (d = dv = D).
template <int D>
struct Shape {
  static_assert(D == 64 || D == 128 || D == 256, "d = dv = 64, 128 or 256");
  static constexpr int kBN = tiles::sm90_fwd_tile(D).keys;        // keys per tile
  static constexpr int kStages = tiles::sm90_fwd_tile(D).stages;  // K/V stages
  static constexpr int kAtoms = D / 64;                           // 64-element atoms of a row
  static constexpr uint32_t kQAtom = kBM * 128;                   // kBM rows x 64 elements
  static constexpr uint32_t kKAtom = kBN * 128;                   // kBN rows x 64 elements
  static constexpr uint32_t kQBytes = kAtoms * kQAtom;
  static constexpr uint32_t kKBytes = kAtoms * kKAtom;  // one K (or V) tile
  static constexpr int kSc = kBN / 2;                   // S accumulators per thread
  static constexpr int kPSteps = kBN / 16;              // k-steps of P V
  static constexpr int kOW = D == 64 ? 32 : 64;         // accumulators per O part (n64 / n128)
  static constexpr int kOParts = D == 256 ? 2 : 1;      // 128-column parts of O
  static constexpr int kSmemBytes =
      static_cast<int>(kQBytes + 2 * kStages * kKBytes) + 1024;  // + 1024-byte alignment slack
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one CTA");
};

struct Maps {
  core::cuda::TensorMap q, k, v;
};

__device__ __forceinline__ float tanh_fast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace sm90f

// kRab: rab is added to S; kMask: a custom mask tensor decides each element (rows see [0, Lk)).
// Each is a compile-time variant of the kernel (four per element type and head size), so that the
// plain kernel keeps its registers (the d = 256 one spilled twice as much with a runtime rab flag).
template <class T, int D, bool kRab, bool kMask>
__global__ void __launch_bounds__(sm90f::kThreads, 1)
    hstu_fwd_sm90_kernel(const __grid_constant__ P p, const __grid_constant__ sm90f::Maps m,
                         const int n_qtiles, const int chunk) {
#if RECOPS_SM90A
  using namespace sm90f;
  using S = Shape<D>;
  constexpr int kBN = S::kBN, kStages = S::kStages, kSc = S::kSc, kPSteps = S::kPSteps;
  constexpr int kOW = S::kOW, kOParts = S::kOParts;
  namespace wg = core::cuda::sm90;
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t bars[2 * kStages + 1];  // full[s], empty[s], Q
  __shared__ int s_lo, s_hi;
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base;
  auto sK = [&](int st) { return base + S::kQBytes + S::kKBytes * (2 * st); };
  auto sV = [&](int st) { return base + S::kQBytes + S::kKBytes * (2 * st + 1); };
  auto full_bar = [&](int st) { return core::cuda::smem_u32(&bars[st]); };
  auto empty_bar = [&](int st) { return core::cuda::smem_u32(&bars[kStages + st]); };
  const uint32_t q_bar = core::cuda::smem_u32(&bars[2 * kStages]);

  // Work order: the (sequence, head) pairs in chunks of `chunk` pairs whose K and V fit in a
  // third of L2 together; inside a chunk, last query tiles first (longest causal rows first),
  // the chunk's pairs adjacent (heads of one sequence, so GQA groups, next to each other). CTAs
  // running together then read the same few pairs' K/V from L2 (in pair-major order with 132
  // different pairs at once, K/V came from DRAM: 4.6 GB for a 0.27 GB problem).
  const int64_t bhs = p.B * p.Hq;
  const int64_t per_chunk = static_cast<int64_t>(chunk) * n_qtiles;
  const int64_t c = static_cast<int64_t>(blockIdx.x) / per_chunk;
  const int64_t r = static_cast<int64_t>(blockIdx.x) % per_chunk;
  const int64_t pairs = min64(chunk, bhs - c * chunk);  // the last chunk may be partial
  const int64_t qt = n_qtiles - 1 - r / pairs;
  const int64_t bh = c * chunk + r % pairs;
  const int64_t b = bh / p.Hq, hq = bh % p.Hq;
  const Seq s = load_seq(p, b);
  const int64_t i0 = qt * kBM;
  if (i0 >= s.Lq) return;  // the whole CTA, before any barrier
  const int64_t kh = hq / (p.Hq / p.Hk);
  const int Lk = static_cast<int>(s.Lk);

  if (threadIdx.x == 0) {
    s_lo = INT_MAX;
    s_hi = 0;
    for (int st = 0; st < kStages; ++st) {
      wg::mbar_init(full_bar(st), 1);
      wg::mbar_init(empty_bar(st), kConsumerWarps);
    }
    wg::mbar_init(q_bar, 1);
    wg::mbar_fence_init();
  }
  __syncthreads();
  // The CTA's key span: the union of its rows' intervals.
  if constexpr (kMask) {  // every row of the CTA sees [0, Lk) before its mask (i0 < Lq)
    if (threadIdx.x == 0 && Lk > 0) {
      s_lo = 0;
      s_hi = Lk;
    }
  } else if (threadIdx.x < kBM) {
    span_add_row(p, s, i0 + threadIdx.x, &s_lo, &s_hi);
  }
  __syncthreads();
  const int t_lo = s_lo < s_hi ? s_lo / kBN : 0;
  const int n_tiles = s_lo < s_hi ? (s_hi + kBN - 1) / kBN - t_lo : 0;
  const int wgi = threadIdx.x / 128;

  if (wgi == 0) {  // ---- producer ----
    wg::regs_dealloc<tiles::kSm90FwdProducerRegs>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      const int q_row0 = static_cast<int>(p.jagged ? s.q0 + i0 : b * p.Sq + i0);
      const int k_row0 = static_cast<int>((p.jagged ? s.k0 : b * p.Sk) + t_lo * kBN);
      wg::tma_prefetch_desc(&m.q);
      wg::tma_prefetch_desc(&m.k);
      wg::tma_prefetch_desc(&m.v);
      wg::mbar_arrive_expect_tx(q_bar, S::kQBytes);
#pragma unroll
      for (int a = 0; a < S::kAtoms; ++a)
        wg::tma_load_3d(sQ + a * S::kQAtom, &m.q, q_bar, 64 * a, static_cast<int>(hq), q_row0);
      for (int n = 0; n < n_tiles; ++n) {
        const int st = n % kStages;
        wg::mbar_wait(empty_bar(st), ((n / kStages) & 1) ^ 1);
        wg::mbar_arrive_expect_tx(full_bar(st), 2 * S::kKBytes);
        const int row = k_row0 + n * kBN;
#pragma unroll
        for (int a = 0; a < S::kAtoms; ++a) {
          wg::tma_load_3d(sK(st) + a * S::kKAtom, &m.k, full_bar(st), 64 * a, static_cast<int>(kh),
                          row);
          wg::tma_load_3d(sV(st) + a * S::kKAtom, &m.v, full_bar(st), 64 * a, static_cast<int>(kh),
                          row);
        }
      }
    }
    return;
  }

  // ---- consumers ----
  wg::regs_alloc<tiles::kSm90FwdConsumerRegs>();
  const int cw = wgi - 1;  // rows cw * 64 .. cw * 64 + 63 of the CTA
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  const int64_t ra = i0 + cw * 64 + warp * 16 + g;  // this thread's rows: ra and ra + 8
  const RowIv iv0 = row_intervals(p, s, ra), iv1 = row_intervals(p, s, ra + 8);
  const float half_alpha = 0.5f * static_cast<float>(p.alpha);
  // rab: this thread's two rows of it (a row past the sequence reads row 0 instead, in rab's
  // extent: its values meet only masked elements; the head stride is 0 for a [B, 1, Sq, Sk] rab),
  // its column stride, and whether a column pair (c, c + 1), c even, is one aligned 32-bit word
  // (unit column stride, even other strides, 4-byte aligned base).
  const T* rab_row[2] = {nullptr, nullptr};
  int64_t rab_cs = 1;
  bool rab_pairs = false;
  if constexpr (kRab) {
    const T* rb = static_cast<const T*>(p.rab) + b * p.rab_s[0] + hq * p.rab_s[1];
#pragma unroll
    for (int u = 0; u < 2; ++u) rab_row[u] = rb + (ra + 8 * u < s.Lq ? ra + 8 * u : 0) * p.rab_s[2];
    rab_cs = p.rab_s[3];
    rab_pairs = rab_cs == 1 && ((p.rab_s[0] | p.rab_s[1] | p.rab_s[2]) & 1) == 0 &&
                (reinterpret_cast<uintptr_t>(p.rab) & 3u) == 0;
  }
  // Custom mask: this thread's two rows of it as bytes (nullptr past the sequence), the bytes of
  // an element (1: bool, 2: the dtype) and the column stride in bytes.
  const unsigned char* mask_row[2] = {nullptr, nullptr};
  int mask_es = 1;
  int64_t mask_cs = 0;
  if constexpr (kMask) {
    mask_es = p.mask_dtype == DType::boolean ? 1 : 2;
    const unsigned char* mb =
        static_cast<const unsigned char*>(p.mask) + (b * p.mask_s[0] + hq * p.mask_s[1]) * mask_es;
#pragma unroll
    for (int u = 0; u < 2; ++u)
      if (ra + 8 * u < s.Lq) mask_row[u] = mb + (ra + 8 * u) * p.mask_s[2] * mask_es;
    mask_cs = p.mask_s[3] * mask_es;
  }

  float o[kOParts][kOW];
#pragma unroll
  for (int h = 0; h < kOParts; ++h)
#pragma unroll
    for (int i = 0; i < kOW; ++i) o[h][i] = 0.f;

  if (n_tiles > 0) {
    const uint32_t q_wg = sQ + cw * 8192;  // 8 row groups of 1024 bytes into each atom
    float sc[kSc];
    uint32_t pa[kPSteps][4], pb[kPSteps][4];

    // Ping-pong: the two consumer warpgroups take turns issuing their wgmma batches (named
    // barriers 1 and 2), so that one's SiLU runs under the other's products (H200, B=32 S=4096
    // H=4 with 256 targets: 1.289 ms against 1.458 ms without, same build, 38fa20f).
    // Each warpgroup issues n_tiles + 1 batches; warpgroup 1 opens the first turn of warpgroup 0
    // and does not hand over after its last batch (every arrival is matched).
    int issues_left = n_tiles + 1;
    auto turn_begin = [&] { wg::named_sync(1 + cw, 256); };
    auto turn_end = [&] {
      --issues_left;
      if (cw == 0 || issues_left > 0) wg::named_arrive(2 - cw, 256);
    };
    if (cw == 1) wg::named_arrive(1, 256);
    // S: D / 16 k-steps, 4 per 64-element atom (32 bytes each) of Q and K.
    auto issue_qk = [&](int st) {
      wg::wg_fence();
#pragma unroll
      for (int t = 0; t < D / 16; ++t) {
        const uint64_t da = wg::make_desc(q_wg + (t / 4) * S::kQAtom + (t % 4) * 32, 16, 1024);
        const uint64_t db = wg::make_desc(sK(st) + (t / 4) * S::kKAtom + (t % 4) * 32, 16, 1024);
        if constexpr (kBN == 128)
          wg::wgmma_ss<T, 0>(sc, da, db, t > 0 ? 1 : 0);
        else
          wg::wgmma_ss_n64<T>(sc, da, db, t > 0 ? 1 : 0);
      }
      wg::wg_commit();
    };
    // O += P V: kPSteps k-steps of 16 keys (2048 bytes of each V atom); part h of O reads the
    // atoms 2h and 2h + 1 (N = 128; the atom stride is the descriptor's leading byte offset).
    auto issue_pv = [&](int st, const uint32_t(&pp)[kPSteps][4]) {
      wg::wg_fence();
#pragma unroll
      for (int t = 0; t < kPSteps; ++t)
#pragma unroll
        for (int h = 0; h < kOParts; ++h) {
          const uint64_t db = wg::make_desc(sV(st) + 2 * h * S::kKAtom + t * 2048, S::kKAtom, 1024);
          if constexpr (kOW == 64)
            wg::wgmma_rs<T, 1>(o[h], pp[t], db, 1);
          else
            wg::wgmma_rs_n64<T, 1>(o[h], pp[t], db, 1);
        }
      wg::wg_commit();
    };
    // rab of tile n, raw, into the registers that will hold the tile's P (free until make_p
    // fills them): pp[j / 2][2 (j % 2) + u] holds the pair of row ra + 8u, columns
    // c0 + 8j + 2qd (+1), the layout of S's accumulators sc[4j + 2u] (+1). Issued before the
    // wait for the tile's S, so the loads run under the products. A tile inside the sequence's
    // keys with pair-aligned rab takes one 32-bit load per pair at fixed offsets; otherwise
    // each element is loaded alone and columns past the sequence (c >= Lk: no row's mask reaches
    // them) read nothing. Every element read lies in rab's [Sq, Sk] extent (Lq <= Sq, Lk <= Sk).
    auto load_rab = [&](int n, uint32_t(&pp)[kPSteps][4]) {
      const int c0 = (t_lo + n) * kBN;
      if (rab_pairs && c0 + kBN <= Lk) {
#pragma unroll
        for (int j = 0; j < kSc / 4; ++j)
#pragma unroll
          for (int u = 0; u < 2; ++u)
            pp[j / 2][(j % 2) * 2 + u] =
                __ldg(reinterpret_cast<const unsigned int*>(rab_row[u] + c0 + 8 * j + 2 * qd));
      } else {
        auto ld = [&](const T* r, int c) -> uint32_t {
          return c < Lk ? __ldg(reinterpret_cast<const unsigned short*>(r + c * rab_cs)) : 0u;
        };
#pragma unroll
        for (int j = 0; j < kSc / 4; ++j)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            const int c = c0 + 8 * j + 2 * qd;
            pp[j / 2][(j % 2) * 2 + u] = ld(rab_row[u], c) | (ld(rab_row[u], c + 1) << 16);
          }
      }
    };
    // The custom mask of tile n as bits (bit i: element sc[i] kept): nonzero, in the row's
    // sequence and before Lk (the spec's rules 1 and 2). Loaded after the tile's S products are
    // issued and tested at once: the loads' latency runs under the products.
    uint64_t mbits = 0;
    auto load_mask = [&](int n) {
      const int c0 = (t_lo + n) * kBN;
      uint64_t bits = 0;
#pragma unroll
      for (int i = 0; i < kSc; ++i) {
        const int c = c0 + 8 * (i / 4) + 2 * qd + (i % 2);
        const unsigned char* r = mask_row[(i % 4) / 2];
        bool keep = false;
        if (r != nullptr && c < Lk) {
          const unsigned char* a = r + c * mask_cs;
          keep = mask_es == 1 ? __ldg(a) != 0
                              : (__ldg(reinterpret_cast<const unsigned short*>(a)) & 0x7fffu) != 0;
        }
        bits |= static_cast<uint64_t>(keep) << i;
      }
      mbits = bits;
    };
    // P of tile n from the S accumulators, as the A fragments of the 8 k-steps of P V. Three
    // straight passes (SiLU on all 64 values, the mask only when the thread's rows do not cover
    // the tile, then the packing), so that the MUFU latencies overlap: with a branch per group
    // of four the compiler serialised each group's tanh -> FFMA -> pack chain (b29e1a5 SASS).
    // With rab, pp holds the tile's rab (load_rab) on entry: x = α (S + rab).
    auto make_p = [&](int n, uint32_t(&pp)[kPSteps][4]) {
      const int c0 = (t_lo + n) * kBN;
      if constexpr (kRab) {
#pragma unroll
        for (int j = 0; j < kSc / 4; ++j)
#pragma unroll
          for (int u = 0; u < 2; ++u) {
            float lo, hi;
            unpack2<T>(pp[j / 2][(j % 2) * 2 + u], lo, hi);
            sc[4 * j + 2 * u] += lo;
            sc[4 * j + 2 * u + 1] += hi;
          }
      }
#pragma unroll
      for (int i = 0; i < kSc; ++i) {
        const float h = sc[i] * half_alpha;
        sc[i] = fmaf(h, tanh_fast(h), h);
      }
      const bool whole =
          !kMask && c0 + kBN <= Lk && iv_covers(iv0, c0, c0 + kBN) && iv_covers(iv1, c0, c0 + kBN);
      if constexpr (kMask) {
#pragma unroll
        for (int i = 0; i < kSc; ++i)
          if (!((mbits >> i) & 1u)) sc[i] = 0.f;
      } else if (!whole) {
        // Branch-free interval test: c in [lo, hi) <=> (unsigned)(c - lo) < (unsigned)(hi - lo).
        auto in = [](int c, int lo, int hi) {
          return static_cast<unsigned>(c - lo) < static_cast<unsigned>(max(hi - lo, 0));
        };
#pragma unroll
        for (int i = 0; i < kSc; ++i) {
          const RowIv& v = (i % 4) < 2 ? iv0 : iv1;
          const int c = c0 + 8 * (i / 4) + 2 * qd + (i % 2);
          if (!(in(c, v.lo0, v.hi0) || in(c, v.lo1, v.hi1))) sc[i] = 0.f;
        }
      }
#pragma unroll
      for (int i = 0; i < kSc / 4; ++i) {
        pp[i / 2][(i % 2) * 2 + 0] = pack2<T>(sc[4 * i + 0], sc[4 * i + 1]);
        pp[i / 2][(i % 2) * 2 + 1] = pack2<T>(sc[4 * i + 2], sc[4 * i + 3]);
      }
    };
    // Key tile n (its P in cur) when a tile follows: the S of tile n + 1 and the P V of tile n
    // in flight together, then the P of tile n + 1 into nxt while the P V runs; the stage of
    // tile n is released at the end. The last tile only has its P V.
    auto release = [&](int st) {
      __syncwarp();
      if (lane == 0) wg::mbar_arrive(empty_bar(st));
    };
    auto step = [&](int n, uint32_t(&cur)[kPSteps][4], uint32_t(&nxt)[kPSteps][4]) {
      const int st = n % kStages, st1 = (n + 1) % kStages;
      wg::mbar_wait(full_bar(st1), ((n + 1) / kStages) & 1);
      turn_begin();
      issue_qk(st1);
      issue_pv(st, cur);
      turn_end();
      if constexpr (kRab) load_rab(n + 1, nxt);
      if constexpr (kMask) load_mask(n + 1);
      wg::wg_wait<1>();
      make_p(n + 1, nxt);
      wg::wg_wait<0>();
      release(st);
    };
    auto last = [&](int n, uint32_t(&cur)[kPSteps][4]) {
      turn_begin();
      issue_pv(n % kStages, cur);
      turn_end();
      wg::wg_wait<0>();
      release(n % kStages);
    };

    wg::mbar_wait(q_bar, 0);
    wg::mbar_wait(full_bar(0), 0);
    turn_begin();
    issue_qk(0);
    turn_end();
    if constexpr (kRab) load_rab(0, pa);
    if constexpr (kMask) load_mask(0);
    wg::wg_wait<0>();
    make_p(0, pa);
    int n = 0;
    for (; n + 2 < n_tiles; n += 2) {
      step(n, pa, pb);
      step(n + 1, pb, pa);
    }
    if (n + 1 < n_tiles) {
      step(n, pa, pb);
      last(n + 1, pb);
    } else {
      last(n, pa);
    }
  }

  // Epilogue: row scale, then bf16x2 / half2 stores of this thread's columns 8i + 2qd (+1).
  float rs[2];
#pragma unroll
  for (int u = 0; u < 2; ++u) rs[u] = ra + 8 * u < s.Lq ? row_scale(p, s, b, ra + 8 * u) : 0.f;
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t i = ra + 8 * u;
    if (i >= s.Lq) continue;
    T* orow = static_cast<T*>(p.out) + b * p.o_batch + (s.q0 + i) * p.o_row + hq * p.o_head;
#pragma unroll
    for (int h = 0; h < kOParts; ++h)
#pragma unroll
      for (int j = 0; j < kOW / 4; ++j)
        *reinterpret_cast<uint32_t*>(orow + 128 * h + 8 * j + 2 * qd) =
            pack2<T>(o[h][4 * j + 2 * u] * rs[u], o[h][4 * j + 2 * u + 1] * rs[u]);
  }
#endif
}

// The plain kernel (no rab, no custom mask): the one whose image the binary-version probe reads.
template <class T, int D>
inline constexpr auto hstu_fwd_sm90_plain = &hstu_fwd_sm90_kernel<T, D, false, false>;

// cudaFuncAttributes::binaryVersion of the image of the bf16 d = 128 instantiation that the runtime
// picks on device `device` (90 when the library was built for 90a and the device is a 9.0 one; 0 on
// error). Defined in inst/fwd_sm90_bf16.cu.
int hstu_fwd_sm90_binary_version(int device);

// Why the Hopper forward cannot run this problem (empty: it can).
inline std::string sm90_fwd_refusal(const P& p) {
  if (p.dtype != DType::bf16 && p.dtype != DType::fp16)
    return "cuda_sm90 runs bf16 and fp16 (fp32 runs on cuda_sm80)";
  if (p.d != p.dv || (p.d != 64 && p.d != 128 && p.d != 256))
    return detail::cat("cuda_sm90's forward needs d = dv = 64, 128 or 256 (got d=", p.d,
                       ", dv=", p.dv, "); cuda_sm80_fa / cuda_sm80 run the rest");
  if (p.func) return "cuda_sm90 takes no func (cuda_sm80 runs it)";
  if (p.kv_cache) return "cuda_sm90 has no paged KV; cuda_sm80_fa runs it";
  if (p.Sq > (INT_MAX >> 1) || p.Sk > (INT_MAX >> 1))
    return "cuda_sm90 needs sequence lengths below 2^30";
  const int64_t rows_q = p.jagged ? p.total_q : p.B * p.Sq;
  const int64_t rows_k = p.jagged ? p.total_k : p.B * p.Sk;
  if (rows_q >= INT_MAX - sm90f::kBM || rows_k >= INT_MAX - sm90f::kBM)
    return "cuda_sm90 needs fewer than 2^31 - 128 token rows (TMA coordinates)";
  if (!p.jagged &&
      (p.q_batch != p.Sq * p.q_row || p.k_batch != p.Sk * p.k_row || p.v_batch != p.Sk * p.v_row))
    return "cuda_sm90 needs jagged or batch-contiguous dense q, k, v";
  const size_t es = 2;
  if (!fa_rows_aligned16(p.q, es, {p.q_row, p.q_head}) ||
      !fa_rows_aligned16(p.k, es, {p.k_row, p.k_head}) ||
      !fa_rows_aligned16(p.v, es, {p.v_row, p.v_head}) ||
      !fa_rows_aligned16(p.out, es, {p.o_batch, p.o_row, p.o_head}))
    return "cuda_sm90 needs 16-byte aligned rows of q, k, v, out";
  // TMA tensor maps nest their dimensions: a head holds its d elements, a token row its heads
  // (the driver refuses other stride orders, e.g. a head-major view).
  auto nested = [](int64_t dim, int64_t heads, int64_t head_stride, int64_t row_stride) {
    return head_stride >= dim && row_stride >= head_stride * heads;
  };
  if (!nested(p.d, p.Hq, p.q_head, p.q_row) || !nested(p.d, p.Hk, p.k_head, p.k_row) ||
      !nested(p.dv, p.Hk, p.v_head, p.v_row))
    return "cuda_sm90 needs token-major q, k, v (a token row holds its heads, a head its d "
           "contiguous elements)";
  return {};
}

// The forward at head size D = p.d = p.dv. It trusts the dispatch: its only caller is
// hstu_attn_fwd_cuda_sm90 (launch.cu), which core::dispatch runs right after
// hstu_attn_fwd_sm90_accepts accepted these params (sm90_fwd_refusal, the sm_90a image), and which
// picks D from p.d; so the accept test runs once per call. A new caller must run
// sm90_fwd_refusal first: the TMA maps, 16-byte stores and int coordinates rely on every
// condition it checks.
template <class T, int D>
Status run_fwd_sm90(const P& p, const Context& ctx) {
  using S = sm90f::Shape<D>;
  constexpr const char* kOp = "hstu_attn_fwd";
  const int64_t n_qtiles = (p.Sq + sm90f::kBM - 1) / sm90f::kBM;
  const int64_t gx = n_qtiles * p.B * p.Hq;
  if (gx == 0) return Status::Ok();
  if (gx > INT_MAX)
    return Status(StatusCode::not_implemented,
                  detail::cat(kOp, ": cuda_sm90 grid too large (", gx, " blocks)"));
  // Pairs per work chunk: as many (sequence, head) pairs as have K and V (max length) in a
  // third of L2 (tiles::kSm90FwdL2Part), at least one.
  const cudaDeviceProp* props = nullptr;
  RECOPS_RETURN_IF_ERROR(core::cuda::current_device_properties(&props));
  const int64_t kv_pair_bytes = std::max<int64_t>(1, p.Sk * (p.d + p.dv) * 2);
  const int chunk = static_cast<int>(std::clamp<int64_t>(
      props->l2CacheSize / tiles::kSm90FwdL2Part / kv_pair_bytes, 1, p.B * p.Hq));
  sm90f::Maps m{};
  const int64_t rows_q = p.jagged ? p.total_q : p.B * p.Sq;
  const int64_t rows_k = p.jagged ? p.total_k : p.B * p.Sk;
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.q, p.q, p.d, p.Hq, rows_q, 2 * p.q_head, 2 * p.q_row, sm90f::kBM, "hstu_attn_fwd: q"));
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.k, p.k, p.d, p.Hk, rows_k, 2 * p.k_head, 2 * p.k_row, S::kBN, "hstu_attn_fwd: k"));
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.v, p.v, p.dv, p.Hk, rows_k, 2 * p.v_head, 2 * p.v_row, S::kBN, "hstu_attn_fwd: v"));
  const dim3 grid(static_cast<unsigned>(gx)), block(sm90f::kThreads);
  const size_t smem = static_cast<size_t>(S::kSmemBytes);
  const int nq = static_cast<int>(n_qtiles);
  if (p.rab && p.mask)
    return RECOPS_LAUNCH_KERNEL(kOp, (hstu_fwd_sm90_kernel<T, D, true, true>), grid, block, smem,
                                ctx.stream, p, m, nq, chunk);
  if (p.rab)
    return RECOPS_LAUNCH_KERNEL(kOp, (hstu_fwd_sm90_kernel<T, D, true, false>), grid, block, smem,
                                ctx.stream, p, m, nq, chunk);
  if (p.mask)
    return RECOPS_LAUNCH_KERNEL(kOp, (hstu_fwd_sm90_kernel<T, D, false, true>), grid, block, smem,
                                ctx.stream, p, m, nq, chunk);
  return RECOPS_LAUNCH_KERNEL(kOp, (hstu_fwd_sm90_kernel<T, D, false, false>), grid, block, smem,
                              ctx.stream, p, m, nq, chunk);
}

}  // namespace recops::ops::hstu_cuda
