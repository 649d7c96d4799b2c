// block_sparse_attention/cuda/kernels.cuh: the flash-attention kernel over selected key blocks
// (spec §7), templated on the element type (bf16, fp16) and the head dim (64, 128, 256); one
// instantiation per file in inst/.
//
// A CTA of 4 warps owns up to 64 query tokens of one (batch, head, query block) (a block of
// Bs tokens takes ceil(Bs/64) CTAs; Bs < 64 leaves rows idle): warp w rows [16w, 16w + 16). Q is
// staged once in shared memory; the row's selected key blocks (ids out of [0, Kb) are skipped,
// blocks wholly after the tile's last causal key are skipped) stream through shared memory 64 keys
// at a time (K and V, zero rows past Lk). S = Q·Kᵀ and O += P·V are mma.sync m16n8k16 with fp32
// accumulation; P is rounded to the input dtype for P·V (the row sum uses the fp32 P). The softmax
// is online in fp32 (running max and sum per row); keys past Lk and, when causal, past the token's
// right-down diagonal (s > Lk − Lq + t) are masked at token level. Rows with no allowed key give 0
// and lse = −inf. Shared-memory rows are padded by 8 elements so that the fragment reads of 8 rows
// fall in distinct banks.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "core/cuda/mma.cuh"
#include "ops/stem/block_sparse_attention/cuda/common.cuh"

namespace recops::ops::bsa_cuda {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kQTile = 64;  // query tokens per CTA
constexpr int kKTile = 64;  // keys per shared-memory stage

template <class T, int kD>
__global__ void __launch_bounds__(kThreads) bsa_fwd_kernel(Args a) {
  constexpr int kLd = kD + 8;  // padded shared row (elements)
  constexpr int kDn = kD / 8;  // n-tiles of the output
  extern __shared__ __align__(16) unsigned char smem_raw[];
  uint16_t* sQ = reinterpret_cast<uint16_t*>(smem_raw);
  uint16_t* sK = sQ + kQTile * kLd;
  uint16_t* sV = sK + kKTile * kLd;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const float ninf = -INFINITY;

  for (int64_t tile = blockIdx.x; tile < a.num_tiles; tile += gridDim.x) {
    const TileAt at = tile_at(a, tile);
    const int64_t b = at.b, hq = at.hq, hk = at.hk, i = at.i, sub = at.sub;
    const BatchRows rows = batch_rows(a, b, INT32_MAX);
    const int64_t q0 = rows.q0, Lq = rows.Lq, kv0 = rows.kv0, Lk = rows.Lk;
    const int64_t t0 = i * a.Bs + (sub % a.sub_per_block) * kQTile;
    if (t0 >= Lq) continue;  // uniform across the CTA
    // Tokens of this tile: at most 64, inside query block i and inside the batch.
    const int64_t t_end = (i + 1) * a.Bs < Lq ? (i + 1) * a.Bs : Lq;
    const int64_t nt = t_end - t0 < kQTile ? t_end - t0 : kQTile;
    const int64_t Kb = (Lk + a.Bs - 1) / a.Bs;
    const int64_t diag = Lk - Lq;  // key s is allowed for token t when s <= diag + t

    __syncthreads();  // the previous tile's readers of sQ are done
    for (int x = tid; x < kQTile * kDn; x += kThreads) {
      const int row = x / kDn, c = x % kDn * 8;
      const uint16_t* src =
          row < nt ? a.q + (q0 + t0 + row) * a.q_tok_stride + hq * a.q_head_stride + c : nullptr;
      copy8(sQ + row * kLd + c, src, a.vec);
    }

    float o[kDn][4];
#pragma unroll
    for (int n = 0; n < kDn; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[n][e] = 0.0f;
    float m[2] = {ninf, ninf}, l[2] = {0.0f, 0.0f};
    const int64_t tok[2] = {t0 + 16 * warp + gid, t0 + 16 * warp + gid + 8};

    const int64_t row_id = (b * a.Nq + hq) * a.Qmax + i;
    const int64_t L = clamp64(a.seq_len[row_id], 0, a.Kmax);
    const int32_t* ids = a.indices + row_id * a.Kmax;
    const int64_t last_key = a.causal ? diag + t0 + nt - 1 : INT64_MAX;
    for (int64_t sel = 0; sel < L; ++sel) {
      const int64_t j = __ldg(ids + sel);
      if (j < 0 || j >= Kb) continue;
      for (int64_t s0 = j * a.Bs; s0 < (j + 1) * a.Bs && s0 < Lk && s0 <= last_key; s0 += kKTile) {
        __syncthreads();  // the previous stage's readers of sK, sV are done
        for (int x = tid; x < kKTile * kDn; x += kThreads) {
          const int row = x / kDn, c = x % kDn * 8;
          const int64_t s = s0 + row;
          const uint16_t* ks = nullptr;
          const uint16_t* vs = nullptr;
          if (s < Lk && s < (j + 1) * a.Bs) {
            const int64_t t = kv_token(a, b, kv0, s);
            if (a.paged) {
              const int64_t pg = t / a.page_size, sl = t % a.page_size;
              ks = a.k + pg * a.k_page_stride + sl * a.k_tok_stride + hk * a.k_head_stride + c;
              vs = a.v + pg * a.v_page_stride + sl * a.v_tok_stride + hk * a.v_head_stride + c;
            } else {
              ks = a.k + t * a.k_tok_stride + hk * a.k_head_stride + c;
              vs = a.v + t * a.v_tok_stride + hk * a.v_head_stride + c;
            }
          }
          copy8(sK + row * kLd + c, ks, a.vec);
          copy8(sV + row * kLd + c, vs, a.vec);
        }
        __syncthreads();
        // S = Q Kᵀ for this warp's 16 rows and the stage's 64 keys.
        float sacc[kKTile / 8][4];
#pragma unroll
        for (int n = 0; n < kKTile / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) sacc[n][e] = 0.0f;
        const uint16_t* qa = sQ + (16 * warp + gid) * kLd + 2 * tig;
#pragma unroll 4
        for (int kk = 0; kk < kD; kk += 16) {
          uint32_t af[4];
          af[0] = *reinterpret_cast<const uint32_t*>(qa + kk);
          af[1] = *reinterpret_cast<const uint32_t*>(qa + 8 * kLd + kk);
          af[2] = *reinterpret_cast<const uint32_t*>(qa + kk + 8);
          af[3] = *reinterpret_cast<const uint32_t*>(qa + 8 * kLd + kk + 8);
#pragma unroll
          for (int n = 0; n < kKTile / 8; ++n) {
            const uint16_t* kb = sK + (n * 8 + gid) * kLd + kk + 2 * tig;
            Ops<T>::mma(sacc[n], af, *reinterpret_cast<const uint32_t*>(kb),
                        *reinterpret_cast<const uint32_t*>(kb + 8));
          }
        }
        // Mask, online softmax (rows gid and gid + 8 of the warp; a quad shares a row).
        float corr[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t lim = tok[h] - t0 < nt ? (a.causal ? diag + tok[h] : INT64_MAX) : -1;
          float mx = ninf;
#pragma unroll
          for (int n = 0; n < kKTile / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int64_t s = s0 + n * 8 + 2 * tig + e;
              const bool ok = s < Lk && s < (j + 1) * a.Bs && s <= lim;
              const float x = ok ? sacc[n][2 * h + e] * a.scale : ninf;
              sacc[n][2 * h + e] = x;
              mx = fmaxf(mx, x);
            }
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
          const float mn = fmaxf(m[h], mx);
          corr[h] = m[h] == ninf ? 0.0f : __expf(m[h] - mn);  // m[h] finite: mn is too
          float sum = 0.0f;
#pragma unroll
          for (int n = 0; n < kKTile / 8; ++n)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float x = sacc[n][2 * h + e];
              const float pr = x == ninf ? 0.0f : __expf(x - mn);
              sacc[n][2 * h + e] = pr;
              sum += pr;
            }
          l[h] = l[h] * corr[h] + sum;
          m[h] = mn;
        }
#pragma unroll
        for (int n = 0; n < kDn; ++n) {
          o[n][0] *= corr[0];
          o[n][1] *= corr[0];
          o[n][2] *= corr[1];
          o[n][3] *= corr[1];
        }
        // O += P V: P's fragments are the S accumulators, V's are read per element.
#pragma unroll
        for (int kc = 0; kc < kKTile / 16; ++kc) {
          uint32_t pf[4];
          pf[0] = Ops<T>::pack(sacc[2 * kc][0], sacc[2 * kc][1]);
          pf[1] = Ops<T>::pack(sacc[2 * kc][2], sacc[2 * kc][3]);
          pf[2] = Ops<T>::pack(sacc[2 * kc + 1][0], sacc[2 * kc + 1][1]);
          pf[3] = Ops<T>::pack(sacc[2 * kc + 1][2], sacc[2 * kc + 1][3]);
          const uint16_t* vr = sV + (kc * 16 + 2 * tig) * kLd + gid;
#pragma unroll
          for (int n = 0; n < kDn; ++n) {
            const uint16_t* vp = vr + n * 8;
            const uint32_t b0 =
                static_cast<uint32_t>(vp[0]) | (static_cast<uint32_t>(vp[kLd]) << 16);
            const uint32_t b1 =
                static_cast<uint32_t>(vp[8 * kLd]) | (static_cast<uint32_t>(vp[9 * kLd]) << 16);
            Ops<T>::mma(o[n], pf, b0, b1);
          }
        }
      }
    }
    // Epilogue: the row sums are spread over the quad.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
      l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      if (tok[h] - t0 >= nt) continue;
      const int64_t row = q0 + tok[h];
      const bool any = l[h] != 0.0f;  // NaN (a NaN score) is not empty: it spreads
      const float inv = any ? 1.0f / l[h] : 0.0f;
      uint16_t* dst = a.out + (row * a.Nq + hq) * kD + 2 * tig;
#pragma unroll
      for (int n = 0; n < kDn; ++n)
        *reinterpret_cast<uint32_t*>(dst + n * 8) =
            Ops<T>::pack(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
      if (tig == 0) a.lse[hq * a.Tq + row] = any ? m[h] + logf(l[h]) : ninf;
    }
  }
}

}  // namespace recops::ops::bsa_cuda
