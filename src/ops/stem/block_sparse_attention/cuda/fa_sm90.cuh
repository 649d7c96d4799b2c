// block_sparse_attention/cuda/fa_sm90.cuh: the Hopper kernel (cuda_sm90): sm_90a, TMA + wgmma,
// warp-specialised; bf16 / fp16, D = 128, sparse_block_size 128, packed K/V (paged KV runs on
// cuda_sm80_fa). One instantiation per element type and file (inst/fa_sm90_*.cu).
//
// The structure of the cuda_sm90 HSTU forward (ops/hstu/hstu_attn/cuda/fwd_sm90.cuh) with
// FlashAttention's online softmax. A CTA owns one (batch, query head, query block): 128 query
// tokens, three warpgroups:
//   warpgroup 0, the producer: one thread issues TMA loads, Q once, then the K and V blocks of
//     the row's selection (block id j: rows kv0 + 128 j of a 3-D tensor map) into three stages
//     ("full" / "empty" mbarriers); its registers go to the consumers (setmaxnreg);
//   warpgroups 1 and 2: 64 rows each; S = Q Kᵀ (SS wgmma m64n128k16), the online softmax in
//     registers (base 2: x = S · scale · log2 e, running max and sum per row, the row max over
//     the quad by two shuffles), P rounded to the element type as the A fragments of O += P V
//     (RS wgmma, V MN-major). The S of block n + 1 and the P V of block n are in flight together;
//     the softmax of n + 1 runs under P V, and O is rescaled by exp2(m_old - m_new) once P V is
//     done. The two warpgroups take turns issuing (named barriers 1 and 2).
// The row's valid prefix is filtered as cuda_sm80_fa does (ids outside [0, Kb) and blocks wholly
// after the tile's last causal key skipped): the CTA counts the accepted ids first, then the
// producer and every consumer thread walk the prefix with the same filter. Token masks (keys past
// Lk, the right-down diagonal s > Lk - Lq + t, rows past Lq) only on the blocks that reach them.
// A block reaching past Lk reads the next sequence's first rows (or zeros past the tensor) and
// masks them: P = 0 there, so only a non-finite value in those V rows would show (0 · Inf).
// Its standalone version with its own fp64 check, bench/experiments/bsa_wgmma.cu, was removed
// after adoption (git history).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/cuda/launch.h"
#include "core/cuda/sm90.cuh"
#include "core/cuda/tma.h"
#include "ops/stem/block_sparse_attention/cuda/common.cuh"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::bsa_cuda {

namespace sm90 {

constexpr int kD = 128, kBM = 128, kBN = 128, kStages = 3, kThreads = 384;
constexpr uint32_t kAtom = kBN * 128;  // 16 KiB: 128 rows x 64 elements, swizzled
constexpr uint32_t kTile = 2 * kAtom;  // 128 rows x 128 elements
constexpr int kConsumerWarps = 8;
constexpr int kSmemBytes = (1 + 2 * kStages) * kTile + 1024;  // + 1024-byte alignment slack
constexpr int64_t kTokenLimit = 0x7fffff00;                   // q rows and key tokens

struct Maps {
  core::cuda::TensorMap q, k, v;
};

using core::cuda::pack2;

// Pins registers after a wgmma wait: no read or write of them moves across this point.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

}  // namespace sm90

template <class T>
__global__ void __launch_bounds__(sm90::kThreads, 1)
    bsa_sm90_kernel(const __grid_constant__ Args a, const __grid_constant__ sm90::Maps m) {
#if RECOPS_SM90A
  namespace wg = core::cuda::sm90;
  extern __shared__ unsigned char smem_raw[];
  __shared__ __align__(8) uint64_t bars[2 * sm90::kStages + 1];
  const uint32_t base = (core::cuda::smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base;
  auto sK = [&](int st) { return base + sm90::kTile * (1 + 2 * st); };
  auto sV = [&](int st) { return base + sm90::kTile * (2 + 2 * st); };
  auto full_bar = [&](int st) { return core::cuda::smem_u32(&bars[st]); };
  auto empty_bar = [&](int st) { return core::cuda::smem_u32(&bars[sm90::kStages + st]); };
  const uint32_t q_bar = core::cuda::smem_u32(&bars[2 * sm90::kStages]);

  // Heads of one query block adjacent (a GQA group reads the same K/V blocks), last query blocks
  // (the longest causal rows) first.
  const int64_t bh = static_cast<int64_t>(blockIdx.x) % (a.B * a.Nq);
  const int64_t qi = a.Qmax - 1 - static_cast<int64_t>(blockIdx.x) / (a.B * a.Nq);
  const int64_t b = bh / a.Nq, hq = bh % a.Nq, hk = hq / a.G;
  const int64_t q0 = clamp64(a.cu_q[b * a.cu_q_stride], 0, a.Tq);
  const int Lq = static_cast<int>(clamp64(a.cu_q[(b + 1) * a.cu_q_stride], q0, a.Tq) - q0);
  const int64_t kv0 = clamp64(a.cu_kv[b * a.cu_kv_stride], 0, a.Tk);
  const int64_t lk = clamp64(a.lk[b * a.lk_stride], 0, a.Tk - kv0);
  const int Lk = static_cast<int>(lk);
  const int t0 = static_cast<int>(qi) * sm90::kBM;
  if (t0 >= Lq) return;  // the whole CTA, before any barrier
  const int nt = min(sm90::kBM, Lq - t0);
  const int Kb = (Lk + sm90::kBN - 1) / sm90::kBN;
  const int diag = Lk - Lq;  // key s is allowed for token t when s <= diag + t (causal)
  const int last_key = a.causal ? diag + t0 + nt - 1 : INT_MAX;
  const int64_t row_id = (b * a.Nq + hq) * a.Qmax + qi;
  const int L = static_cast<int>(clamp64(a.seq_len[row_id], 0, a.Kmax));
  const int32_t* ids = a.indices + row_id * a.Kmax;
  auto accept = [&](int j) { return j >= 0 && j < Kb && j * sm90::kBN <= last_key; };

  if (threadIdx.x == 0) {
    for (int st = 0; st < sm90::kStages; ++st) {
      wg::mbar_init(full_bar(st), 1);
      wg::mbar_init(empty_bar(st), sm90::kConsumerWarps);
    }
    wg::mbar_init(q_bar, 1);
    wg::mbar_fence_init();
  }
  // The accepted blocks of the prefix, counted by the whole CTA (also the barrier after the init).
  int n_tiles = 0;
  for (int k0 = 0; k0 < L; k0 += sm90::kThreads) {
    const int k = k0 + static_cast<int>(threadIdx.x);
    n_tiles += __syncthreads_count(k < L && accept(__ldg(ids + k)));
  }
  __syncthreads();
  const int wgi = threadIdx.x / 128;
  // The walk over the accepted ids, the same in every thread that walks.
  int sel = -1;
  auto next_block = [&] {
    int j;
    do {
      j = __ldg(ids + ++sel);
    } while (!accept(j));
    return j;
  };

  if (wgi == 0) {  // ---- producer ----
    wg::regs_dealloc<24>();
    if (threadIdx.x == 0 && n_tiles > 0) {
      wg::tma_prefetch_desc(&m.q);
      wg::tma_prefetch_desc(&m.k);
      wg::tma_prefetch_desc(&m.v);
      const int qrow = static_cast<int>(q0 + t0), h = static_cast<int>(hq),
                kh = static_cast<int>(hk);
      wg::mbar_arrive_expect_tx(q_bar, sm90::kTile);
      wg::tma_load_3d(sQ, &m.q, q_bar, 0, h, qrow);
      wg::tma_load_3d(sQ + sm90::kAtom, &m.q, q_bar, 64, h, qrow);
      for (int n = 0; n < n_tiles; ++n) {
        const int st = n % sm90::kStages;
        const int row = static_cast<int>(kv0) + next_block() * sm90::kBN;
        wg::mbar_wait(empty_bar(st), ((n / sm90::kStages) & 1) ^ 1);
        wg::mbar_arrive_expect_tx(full_bar(st), 2 * sm90::kTile);
        wg::tma_load_3d(sK(st), &m.k, full_bar(st), 0, kh, row);
        wg::tma_load_3d(sK(st) + sm90::kAtom, &m.k, full_bar(st), 64, kh, row);
        wg::tma_load_3d(sV(st), &m.v, full_bar(st), 0, kh, row);
        wg::tma_load_3d(sV(st) + sm90::kAtom, &m.v, full_bar(st), 64, kh, row);
      }
    }
    return;
  }

  // ---- consumers ----
  wg::regs_alloc<240>();
  const int cw = wgi - 1;
  const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  const int ta =
      t0 + cw * 64 + warp * 16 + g;  // this thread's tokens (in the sequence): ta, ta + 8
  // The last key each row may see; -1 for rows past Lq.
  const int lim0 = ta < Lq ? (a.causal ? diag + ta : Lk - 1) : -1;
  const int lim1 = ta + 8 < Lq ? (a.causal ? diag + ta + 8 : Lk - 1) : -1;
  const float scale_log2 = a.scale * 1.4426950408889634f;

  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.f;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;

  if (n_tiles > 0) {
    const uint32_t q_wg = sQ + cw * 8192;
    float sc[64];
    uint32_t pa[8][4], pb[8][4];
    float corr0 = 0.f, corr1 = 0.f;

    int issues_left = n_tiles + 1;
    auto turn_begin = [&] { wg::named_sync(1 + cw, 256); };
    auto turn_end = [&] {
      --issues_left;
      if (cw == 0 || issues_left > 0) wg::named_arrive(2 - cw, 256);
    };
    if (cw == 1) wg::named_arrive(1, 256);
    auto issue_qk = [&](int st) {
      wg::wg_fence();
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const uint32_t off = (t / 4) * sm90::kAtom + (t % 4) * 32;
        wg::wgmma_ss<T, 0>(sc, wg::make_desc(q_wg + off, 16, 1024),
                           wg::make_desc(sK(st) + off, 16, 1024), t > 0 ? 1 : 0);
      }
      wg::wg_commit();
    };
    auto issue_pv = [&](int st, const uint32_t(&pp)[8][4]) {
      wg::wg_fence();
#pragma unroll
      for (int t = 0; t < 8; ++t)
        wg::wgmma_rs<T, 1>(o, pp[t], wg::make_desc(sV(st) + t * 2048, sm90::kAtom, 1024), 1);
      wg::wg_commit();
    };
    // The online softmax of the next accepted block (S in sc): scores to base 2, masked where
    // needed, the new row maxima, P into pp, corr = exp2(m_old - m_new) for O (applied by the
    // caller once the previous P V is done), l = l corr + Σ P. (exp2f, not an inline-asm ex2:
    // with the asm, ptxas spilled in the standalone version.)
    auto softmax = [&](uint32_t(&pp)[8][4]) {
      const int c0 = next_block() * sm90::kBN;
#pragma unroll
      for (int i = 0; i < 64; ++i) sc[i] *= scale_log2;
      if (c0 + sm90::kBN - 1 > min(lim0, lim1)) {
#pragma unroll
        for (int i = 0; i < 64; ++i) {
          const int c = c0 + 8 * (i / 4) + 2 * qd + (i % 2);
          if (c > ((i % 4) < 2 ? lim0 : lim1)) sc[i] = -INFINITY;
        }
      }
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        if ((i % 4) < 2)
          mx0 = fmaxf(mx0, sc[i]);
        else
          mx1 = fmaxf(mx1, sc[i]);
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      const float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
      const float mu0 = mn0 == -INFINITY ? 0.f : mn0, mu1 = mn1 == -INFINITY ? 0.f : mn1;
      corr0 = exp2f(m0 - mu0);  // m_old = -inf: 0 (O and l are 0 then)
      corr1 = exp2f(m1 - mu1);
      m0 = mn0;
      m1 = mn1;
      float s0 = 0.f, s1 = 0.f;
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        if ((i % 4) < 2) {
          sc[i] = exp2f(sc[i] - mu0);
          s0 += sc[i];
        } else {
          sc[i] = exp2f(sc[i] - mu1);
          s1 += sc[i];
        }
      }
      l0 = fmaf(l0, corr0, s0);
      l1 = fmaf(l1, corr1, s1);
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        pp[i / 2][(i % 2) * 2 + 0] = sm90::pack2<T>(sc[4 * i + 0], sc[4 * i + 1]);
        pp[i / 2][(i % 2) * 2 + 1] = sm90::pack2<T>(sc[4 * i + 2], sc[4 * i + 3]);
      }
    };
    auto rescale_o = [&] {
#pragma unroll
      for (int i = 0; i < 64; ++i) o[i] *= (i % 4) < 2 ? corr0 : corr1;
    };
    auto release = [&](int st) {
      __syncwarp();
      if (lane == 0) wg::mbar_arrive(empty_bar(st));
    };
    auto step = [&](int n, uint32_t(&cur)[8][4], uint32_t(&nxt)[8][4]) {
      const int st = n % sm90::kStages, st1 = (n + 1) % sm90::kStages;
      wg::mbar_wait(full_bar(st1), ((n + 1) / sm90::kStages) & 1);
      turn_begin();
      issue_qk(st1);
      issue_pv(st, cur);
      turn_end();
      wg::wg_wait<1>();
      sm90::fence_regs(sc);
      softmax(nxt);
      wg::wg_wait<0>();
      sm90::fence_regs(o);
      rescale_o();
      release(st);
    };
    auto last = [&](int n, uint32_t(&cur)[8][4]) {
      turn_begin();
      issue_pv(n % sm90::kStages, cur);
      turn_end();
      wg::wg_wait<0>();
      release(n % sm90::kStages);
    };

    wg::mbar_wait(q_bar, 0);
    wg::mbar_wait(full_bar(0), 0);
    turn_begin();
    issue_qk(0);
    turn_end();
    wg::wg_wait<0>();
    sm90::fence_regs(sc);
    softmax(pa);  // O is 0: no rescale
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

  // Epilogue: the row sums over the quad, out = O / l, lse = (m + log2 l) ln 2; an empty row
  // gives 0 and -inf.
  l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
  l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
  l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int t = ta + 8 * u;
    if (t >= Lq) continue;
    const float l = u == 0 ? l0 : l1, mr = u == 0 ? m0 : m1;
    const bool any = l != 0.f;  // NaN (a NaN score) is not empty: it spreads
    const float inv = any ? 1.f / l : 0.f;
    uint16_t* orow = a.out + ((q0 + t) * a.Nq + hq) * sm90::kD;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      *reinterpret_cast<uint32_t*>(orow + 8 * j + 2 * qd) =
          sm90::pack2<T>(o[4 * j + 2 * u] * inv, o[4 * j + 2 * u + 1] * inv);
    if (qd == 0)
      a.lse[hq * a.Tq + q0 + t] = any ? (mr + __log2f(l)) * 0.6931471805599453f : -INFINITY;
  }
#endif
}

// cudaFuncAttributes::binaryVersion of the bf16 instantiation's image on `device` (90 for an
// sm_90a build on a 9.0 device; 0 on error). Defined in inst/fa_sm90_bf16.cu.
int bsa_sm90_binary_version(int device);

template <class T>
Status launch_sm90(const Args& a, const Context& ctx) {
  constexpr const char* kOp = "block_sparse_attention";
  const int64_t grid = a.B * a.Nq * a.Qmax;
  if (grid == 0) return Status::Ok();
  if (grid > INT_MAX)
    return Status(StatusCode::not_implemented,
                  "recops.block_sparse_attention: cuda_sm90 grid too large");
  sm90::Maps m{};
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.q, a.q, sm90::kD, a.Nq, a.Tq, 2 * a.q_head_stride, 2 * a.q_tok_stride, sm90::kBM,
      "recops.block_sparse_attention: q"));
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.k, a.k, sm90::kD, a.Nk, a.Tk, 2 * a.k_head_stride, 2 * a.k_tok_stride, sm90::kBN,
      "recops.block_sparse_attention: k"));
  RECOPS_RETURN_IF_ERROR(core::cuda::make_tensor_map_3d_b16(
      &m.v, a.v, sm90::kD, a.Nk, a.Tk, 2 * a.v_head_stride, 2 * a.v_tok_stride, sm90::kBN,
      "recops.block_sparse_attention: v"));
  return RECOPS_LAUNCH_KERNEL(kOp, (bsa_sm90_kernel<T>), dim3(static_cast<unsigned>(grid)),
                              dim3(sm90::kThreads), static_cast<size_t>(sm90::kSmemBytes),
                              ctx.stream, a, m);
}

extern template Status launch_sm90<__nv_bfloat16>(const Args&, const Context&);
extern template Status launch_sm90<__half>(const Args&, const Context&);

}  // namespace recops::ops::bsa_cuda
