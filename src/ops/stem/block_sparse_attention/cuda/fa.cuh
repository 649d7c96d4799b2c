// block_sparse_attention/cuda/fa.cuh: the pipelined tensor-core kernel (`cuda_sm80_fa`) over the
// selected key blocks (spec §7), templated on the element type (bf16, fp16) and the head dim
// (64, 128); one instantiation per file in inst/fa_*.cu.
//
// A CTA of 8 warps owns 128 query tokens of one (batch, head, query block) (sparse_block_size a
// multiple of 128; a block of Bs tokens takes Bs/128 CTAs), warp w rows [16w, 16w + 16), so the
// K/V tiles it stages serve 128 rows. The row's valid prefix is walked in order as a flat list of
// 64-key stages (ids outside [0, Kb) skipped; keys past Lk and stages wholly after the tile's last
// causal key skipped). K and V of the next stage are fetched with cp.async (16-byte copies,
// zero-filled past Lk) into the second of two shared-memory buffers while the current one is
// used. S = Q·Kᵀ and O += P·V are mma.sync m16n8k16 with fp32 accumulation; the fragments come
// from ldmatrix (K non-transposed, V transposed). The softmax is online in fp32 with exp2 and the
// scale folded in before the max; P is rounded to the input dtype for P·V (the row sum uses the
// fp32 P). Token-level masks (keys past Lk or past the block, and the right-down causal diagonal s
// > Lk − Lq + t) are applied only on stages that need them. Rows with no allowed key give 0 and lse
// = −inf. Shared rows are padded by 8 elements: the 8 row addresses of an ldmatrix phase fall in
// distinct banks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda/launch.h"
#include "core/cuda/mma.cuh"
#include "ops/stem/block_sparse_attention/cuda/kernels.cuh"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::bsa_cuda {

constexpr int kFaWarps = 8;
constexpr int kFaThreads = kFaWarps * 32;
constexpr int kFaQTile = 128;  // query tokens per CTA
constexpr int kFaKTile = 64;   // keys per stage

using core::cuda::cp_async16;
using core::cuda::cp_async_commit;
using core::cuda::cp_async_wait;
using core::cuda::ldsm_x4;
using core::cuda::ldsm_x4_t;
using core::cuda::smem_u32;

// The walk over a row's stages: (sel, key block j, first key s0, end of the block's keys kend) of
// the stage to run. Token quantities fit int32: the entry caps the lengths (fa_token_limit).
struct StageCursor {
  int sel = -1, j = 0, s0 = 0, kend = 0;
};

// Advances `c` to the next stage; false when the prefix is exhausted. Uniform across the CTA.
__device__ __forceinline__ bool next_stage(StageCursor& c, const int32_t* ids, int L, int Kb,
                                           int Lk, int Bs, int last_key) {
  if (c.sel >= 0) {
    const int s = c.s0 + kFaKTile;
    if (s < c.kend && s <= last_key) {
      c.s0 = s;
      return true;
    }
  }
  for (++c.sel; c.sel < L; ++c.sel) {
    const int j = __ldg(ids + c.sel);
    if (j < 0 || j >= Kb) continue;
    const int s = j * Bs;  // < Lk, since j <= Kb - 1
    if (s > last_key) continue;
    c.j = j;
    c.s0 = s;
    c.kend = Lk - s > Bs ? s + Bs : Lk;
    return true;
  }
  return false;
}

// Largest token count (q rows, keys) the kernel takes: s + 2·kFaKTile never overflows int32.
constexpr int64_t kFaTokenLimit = 0x7fffff00;

// kMt: m16 tiles per warp (1: 8 warps x 16 rows; 2: 4 warps x 32 rows, each K/V fragment feeding
// two MMAs: half the shared-memory fragment traffic per FLOP, twice the registers).
template <class T, int kD, int kMt>
__global__ void __launch_bounds__(kFaThreads / kMt, 2) bsa_fa_kernel(Args a) {
  constexpr int kThreadsT = kFaThreads / kMt;
  constexpr int kLd = kD + 8;        // padded shared row (elements)
  constexpr int kCh = kD / 8;        // 16-byte chunks per row
  constexpr int kDn = kD / 8;        // n-tiles of the output
  constexpr int kSn = kFaKTile / 8;  // n-tiles of S
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* sQ = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* sK = sQ + kFaQTile * kLd;      // [2][kFaKTile][kLd]
  uint16_t* sV = sK + 2 * kFaKTile * kLd;  // [2][kFaKTile][kLd]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const float ninf = -INFINITY;
  const float scale_log2 = a.scale * 1.4426950408889634f;
  // This thread's 16-byte column of every staged row, and its first row.
  const int ch = tid % kCh, row0 = tid / kCh;
  constexpr int kRowStep = kThreadsT / kCh;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const TileAt at = tile_at(a, tile);
    const int64_t b = at.b, hq = at.hq, hk = at.hk, i = at.i, sub = at.sub;
    const BatchRows rows = batch_rows(a, b, kFaTokenLimit);
    const int64_t q0 = rows.q0, kv0 = rows.kv0, lk = rows.Lk;
    const int Lq = static_cast<int>(rows.Lq);
    const int Lk = static_cast<int>(lk), Bs = static_cast<int>(a.Bs);
    const int64_t t0l = i * a.Bs + (sub % a.sub_per_block) * kFaQTile;
    if (t0l >= Lq) continue;  // uniform across the CTA
    const int t0 = static_cast<int>(t0l);
    const int t_end = Lq - static_cast<int>(i) * Bs > Bs ? static_cast<int>(i + 1) * Bs : Lq;
    const int nt = t_end - t0 < kFaQTile ? t_end - t0 : kFaQTile;
    const int Kb = static_cast<int>((lk + Bs - 1) / Bs);
    const int diag = Lk - Lq;  // key s is allowed for token t when s <= diag + t
    const int last_key = a.causal ? diag + t0 + nt - 1 : INT32_MAX;
    const int64_t row_id = (b * a.Nq + hq) * a.Qmax + i;
    const int L = static_cast<int>(clamp64(a.seq_len[row_id], 0, a.Kmax));
    const int32_t* ids = a.indices + row_id * a.Kmax;
    // This thread's 16-byte column of K and V (packed: batch b's first token; paged: page 0).
    const uint16_t* kcol = a.k + hk * a.k_head_stride + ch * 8;
    const uint16_t* vcol = a.v + hk * a.v_head_stride + ch * 8;
    if (!a.paged) {
      kcol += kv0 * a.k_tok_stride;
      vcol += kv0 * a.v_tok_stride;
    }
    const int32_t* table = a.paged ? a.table + b * a.max_pages : nullptr;
    const int page_size = static_cast<int>(a.page_size);

    __syncthreads();  // the previous tile's readers of shared memory are done
                      // Q: rows past nt are zero.
#pragma unroll
    for (int r = row0; r < kFaQTile; r += kRowStep) {
      const bool ok = r < nt;
      const uint16_t* src =
          a.q + (ok ? (q0 + t0 + r) * a.q_tok_stride + hq * a.q_head_stride : 0) + ch * 8;
      cp_async16(smem_u32(sQ + r * kLd + ch * 8), src, ok);
    }
    cp_async_commit();

    auto load_stage = [&](const StageCursor& c, int buf) {
      const uint32_t dk = smem_u32(sK + buf * kFaKTile * kLd + ch * 8);
      const uint32_t dv = smem_u32(sV + buf * kFaKTile * kLd + ch * 8);
#pragma unroll
      for (int r = row0; r < kFaKTile; r += kRowStep) {
        const int s = c.s0 + r;
        const bool ok = s < c.kend;
        int64_t ko = 0, vo = 0;
        if (ok) {
          if (a.paged) {
            const int64_t pg = clamp64(__ldg(table + s / page_size), 0, a.num_pages - 1);
            const int sl = s % page_size;
            ko = pg * a.k_page_stride + sl * a.k_tok_stride;
            vo = pg * a.v_page_stride + sl * a.v_tok_stride;
          } else {
            ko = s * a.k_tok_stride;
            vo = s * a.v_tok_stride;
          }
        }
        cp_async16(dk + r * kLd * 2, kcol + ko, ok);
        cp_async16(dv + r * kLd * 2, vcol + vo, ok);
      }
    };

    float o[kMt][kDn][4];
    float m[kMt][2], l[kMt][2];
    int tok[kMt][2];
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt) {
#pragma unroll
      for (int n = 0; n < kDn; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) o[mt][n][e] = 0.0f;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        m[mt][h] = ninf;
        l[mt][h] = 0.0f;
        tok[mt][h] = t0 + 16 * (kMt * warp + mt) + gid + 8 * h;
      }
    }

    // ldmatrix lane addresses (bytes): Q rows 16·(kMt·w + mt) + lane%16, column (lane/16)·8; K rows
    // lane%8 + (lane/16)·8, column ((lane/8)%2)·8; V rows lane%8 + ((lane/8)%2)·8, column
    // (lane/16)·8.
    const uint32_t q_addr = smem_u32(sQ + (16 * kMt * warp + (lane & 15)) * kLd + (lane >> 4) * 8);
    const uint32_t k_off =
        static_cast<uint32_t>(((lane & 7) + (lane >> 4) * 8) * kLd + ((lane >> 3) & 1) * 8) * 2;
    const uint32_t v_off =
        static_cast<uint32_t>(((lane & 7) + ((lane >> 3) & 1) * 8) * kLd + (lane >> 4) * 8) * 2;

    StageCursor cur;
    bool have = next_stage(cur, ids, L, Kb, Lk, Bs, last_key);
    if (have) load_stage(cur, 0);
    cp_async_commit();
    int buf = 0;
    while (have) {
      StageCursor nxt = cur;
      const bool have_next = next_stage(nxt, ids, L, Kb, Lk, Bs, last_key);
      if (have_next) load_stage(nxt, buf ^ 1);
      cp_async_commit();
      cp_async_wait<1>();  // everything but the newest group (the next stage) has landed
      __syncthreads();

      const uint32_t kb_addr = smem_u32(sK + buf * kFaKTile * kLd) + k_off;
      const uint32_t vb_addr = smem_u32(sV + buf * kFaKTile * kLd) + v_off;
      float s[kMt][kSn][4];
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int n = 0; n < kSn; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][n][e] = 0.0f;
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        uint32_t af[kMt][4];
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) ldsm_x4(q_addr + (mt * 16 * kLd + kk * 16) * 2, af[mt]);
#pragma unroll
        for (int np = 0; np < kSn / 2; ++np) {
          uint32_t bf[4];
          ldsm_x4(kb_addr + (np * 16 * kLd + kk * 16) * 2, bf);
#pragma unroll
          for (int mt = 0; mt < kMt; ++mt) {
            Ops<T>::mma(s[mt][2 * np], af[mt], bf[0], bf[1]);
            Ops<T>::mma(s[mt][2 * np + 1], af[mt], bf[2], bf[3]);
          }
        }
      }
      // Scores in log2 units (scale·log2 e folded in first, so any sign of the scale works);
      // token-level masks only where the stage reaches past Lk, the block or the diagonal.
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
        for (int n = 0; n < kSn; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][n][e] *= scale_log2;
      const bool need_mask =
          cur.s0 + kFaKTile > cur.kend || (a.causal && cur.s0 + kFaKTile - 1 > diag + t0);
      if (need_mask) {
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            const int lim = a.causal ? diag + tok[mt][h] : INT32_MAX;
            const int end = cur.kend - 1 < lim ? cur.kend - 1 : lim;  // last allowed key
#pragma unroll
            for (int n = 0; n < kSn; ++n)
#pragma unroll
              for (int e = 0; e < 2; ++e)
                if (cur.s0 + n * 8 + 2 * tig + e > end) s[mt][n][2 * h + e] = ninf;
          }
      }
      // Online softmax (rows gid and gid + 8 of the warp; a quad shares a row).
#pragma unroll
      for (int mt = 0; mt < kMt; ++mt) {
        float corr[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          float mx = ninf;
#pragma unroll
          for (int n = 0; n < kSn; ++n) mx = fmaxf(mx, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float mn = fmaxf(m[mt][h], mx);
          const float base = mn == ninf ? 0.0f : mn;
          corr[h] = exp2f(m[mt][h] - base);  // 0 when m was -inf
          float sum = 0.0f;
#pragma unroll
          for (int n = 0; n < kSn; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float pr = exp2f(s[mt][n][2 * h + e] - base);
              s[mt][n][2 * h + e] = pr;
              sum += pr;
            }
          l[mt][h] = l[mt][h] * corr[h] + sum;
          m[mt][h] = mn;
        }
#pragma unroll
        for (int n = 0; n < kDn; ++n) {
          o[mt][n][0] *= corr[0];
          o[mt][n][1] *= corr[0];
          o[mt][n][2] *= corr[1];
          o[mt][n][3] *= corr[1];
        }
      }
      // O += P V: P's fragments are the S accumulators; V's come transposed by ldmatrix.
#pragma unroll
      for (int kc = 0; kc < kFaKTile / 16; ++kc) {
        uint32_t pf[kMt][4];
#pragma unroll
        for (int mt = 0; mt < kMt; ++mt) {
          pf[mt][0] = Ops<T>::pack(s[mt][2 * kc][0], s[mt][2 * kc][1]);
          pf[mt][1] = Ops<T>::pack(s[mt][2 * kc][2], s[mt][2 * kc][3]);
          pf[mt][2] = Ops<T>::pack(s[mt][2 * kc + 1][0], s[mt][2 * kc + 1][1]);
          pf[mt][3] = Ops<T>::pack(s[mt][2 * kc + 1][2], s[mt][2 * kc + 1][3]);
        }
#pragma unroll
        for (int dp = 0; dp < kDn / 2; ++dp) {
          uint32_t vf[4];
          ldsm_x4_t(vb_addr + (kc * 16 * kLd + dp * 16) * 2, vf);
#pragma unroll
          for (int mt = 0; mt < kMt; ++mt) {
            Ops<T>::mma(o[mt][2 * dp], pf[mt], vf[0], vf[1]);
            Ops<T>::mma(o[mt][2 * dp + 1], pf[mt], vf[2], vf[3]);
          }
        }
      }
      __syncthreads();  // this stage's buffer is free for the stage after next
      cur = nxt;
      have = have_next;
      buf ^= 1;
    }
    cp_async_wait<0>();  // nothing of this tile stays in flight (Q when no stage ran)
                         // Epilogue: the row sums are spread over the quad.
#pragma unroll
    for (int mt = 0; mt < kMt; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float lt = l[mt][h];
        lt += __shfl_xor_sync(0xffffffffu, lt, 1);
        lt += __shfl_xor_sync(0xffffffffu, lt, 2);
        if (tok[mt][h] - t0 >= nt) continue;
        const int64_t row = q0 + tok[mt][h];  // int64: the address arithmetic below
        const bool any = lt != 0.0f;          // NaN (a NaN score) is not empty: it spreads
        const float inv = any ? 1.0f / lt : 0.0f;
        uint16_t* dst = a.out + (row * a.Nq + hq) * kD + 2 * tig;
#pragma unroll
        for (int n = 0; n < kDn; ++n)
          *reinterpret_cast<uint32_t*>(dst + n * 8) =
              Ops<T>::pack(o[mt][n][2 * h] * inv, o[mt][n][2 * h + 1] * inv);
        if (tig == 0)
          a.lse[hq * a.Tq + row] = any ? m[mt][h] * 0.6931471805599453f + logf(lt) : ninf;
      }
  }
}

inline size_t fa_smem_bytes(int D) {
  return static_cast<size_t>(kFaQTile + 4 * kFaKTile) * (D + 8) * sizeof(uint16_t);
}

template <class T, int kD, int kMt>
Status launch_fa(const Args& a, const Context& ctx) {
  const size_t smem = fa_smem_bytes(kD);
  auto* kernel = &bsa_fa_kernel<T, kD, kMt>;
  // One tile per CTA (the hardware hands out CTAs heaviest tile first); the loop in the kernel
  // covers grids past the launch limit.
  const int64_t g = a.num_tiles < 0x7fffffff ? a.num_tiles : 0x7fffffff;
  return RECOPS_LAUNCH_KERNEL("block_sparse_attention", kernel, dim3(static_cast<unsigned>(g)),
                              dim3(kFaThreads / kMt), smem, ctx.stream, a);
}

extern template Status launch_fa<__nv_bfloat16, 64, 1>(const Args&, const Context&);
extern template Status launch_fa<__nv_bfloat16, 128, 1>(const Args&, const Context&);
extern template Status launch_fa<__nv_bfloat16, 128, 2>(const Args&, const Context&);
extern template Status launch_fa<__half, 64, 1>(const Args&, const Context&);
extern template Status launch_fa<__half, 128, 1>(const Args&, const Context&);
extern template Status launch_fa<__half, 128, 2>(const Args&, const Context&);

}  // namespace recops::ops::bsa_cuda
