// bench/experiments/hstu_fwd_wgmma.cu: a first HSTU forward on Hopper's wgmma (issue 4),
// standalone.
//
// The problem: B sequences of S tokens (full length), H heads, d = dv = 128, bf16, causal HSTU
//   out[b, t, h, :] = Σ_{s <= t} silu(α · ⟨q_t, k_s⟩) / S · v_s,   α = 1/sqrt(d),
// q, k, v and out [B·S, H, 128] (the library's token-major jagged layout). No softmax, so no
// running max or rescaling: each key tile adds silu(S)·V to the output accumulators.
//
// Kernel: a CTA takes 128 query rows of one (b, h), latest tiles first; two warpgroups of 64 rows.
// Q (32 KiB) and two stages of K and V tiles of 128 keys (32 KiB each) sit in shared memory in the
// 128-byte swizzled layout of wgmma.cuh (two 64-column atoms per 128-wide row), loaded by cp.async
// from all 256 threads, the next tile's loads in flight while this one computes (FlashAttention-2
// style; no TMA, no producer warpgroup yet). Per key tile and warpgroup:
//   S (64 x 128, fp32) = Q Kᵀ        8 SS wgmma m64n128k16 (K-major Q and K)
//   P = bf16(silu(α S) / S_len)      masked right of the diagonal on the last tile
//   O (64 x 128, fp32) += P V        8 RS wgmma m64n128k16 (P from the S accumulators, V MN-major)
// The V descriptor's LBO/SBO reading is the macro HSTU_V_LBO_IS_ATOM (1: LBO = the 16 KiB stride
// between 64-column atoms, SBO = 1024; 0: swapped): set it to what wgmma_probe.cu's variants 1 / 2
// say.
//
// The host checks every output of a small problem (B=2, S=1024, H=2) against fp64 and times the
// B=32, S=4096, H=4 shape of the issue (without targets: plain causal), FLOPs by hstu_attention.md
// §6 (2·(d + dv) per valid score entry).
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/hstu_fwd_wgmma \
//     bench/experiments/hstu_fwd_wgmma.cu && /tmp/hstu_fwd_wgmma
// Written 2026-11-29 (session 4) and compiled here for sm_90a; not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../../src/core/cuda/mma.cuh"  // cp.async wrappers
#include "../../src/core/cuda/sm90.cuh"
#include "timing.cuh"

#ifndef HSTU_V_LBO_IS_ATOM
#define HSTU_V_LBO_IS_ATOM 1
#endif

namespace {

namespace wg = recops::core::cuda::sm90;

// The bf16 pair of an RS wgmma A-fragment register (lo in the low half).
__device__ __forceinline__ uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}

constexpr int kD = 128;                       // d = dv
constexpr int kTile = 128;                    // query rows per CTA and keys per stage
constexpr int kThreads = 256;                 // two warpgroups
constexpr int kTileBytes = 32768;             // 128 rows x 128 bf16
constexpr int kAtomBytes = 16384;             // one 64-column atom of a tile: 128 rows x 128 bytes
constexpr int kSmem = 5 * kTileBytes + 1024;  // Q, 2 x (K, V), alignment slack

using recops::core::cuda::cp_async16;
using recops::core::cuda::cp_async_commit;
using recops::core::cuda::cp_async_wait;

// Rows row0 .. row0 + 127 (tokens) of head h of a [tokens, H, 128] tensor into the swizzled tile at
// shared address `dst`: 16 chunks of 16 bytes per row, chunk c to atom c / 8, column (c % 8)·8.
__device__ __forceinline__ void load_tile(uint32_t dst, const __nv_bfloat16* src, int64_t row0,
                                          int H, int h) {
  for (int i = threadIdx.x; i < kTile * 16; i += kThreads) {
    const int r = i / 16, c = i % 16;
    const __nv_bfloat16* g = src + ((row0 + r) * H + h) * kD + c * 8;
    cp_async16(dst + (c / 8) * kAtomBytes + wg::sw128(r, (c % 8) * 8), g, true);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    hstu_fwd_kernel(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v,
                    __nv_bfloat16* out, int B, int S, int H, float alpha, float inv_len) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw + 1023u) & ~1023u;
  const uint32_t sQ = base, sK[2] = {base + kTileBytes, base + 3 * kTileBytes},
                 sV[2] = {base + 2 * kTileBytes, base + 4 * kTileBytes};
  const int tiles = S / kTile;
  // Latest query tiles first: they have the most key tiles.
  const int qt = tiles - 1 - static_cast<int>(blockIdx.x % tiles);
  const int h = static_cast<int>(blockIdx.x / tiles) % H,
            b = static_cast<int>(blockIdx.x / tiles) / H;
  const int64_t tok0 = static_cast<int64_t>(b) * S;
  const int wgi = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;

  load_tile(sQ, q, tok0 + qt * kTile, H, h);
  load_tile(sK[0], k, tok0, H, h);
  load_tile(sV[0], v, tok0, H, h);
  cp_async_commit();

  float o[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) o[i] = 0.0f;
  // This warpgroup's 64 rows: 8 row groups of 1024 bytes into each atom of the Q tile.
  const uint32_t q_wg = sQ + wgi * 8192;
  for (int j = 0; j <= qt; ++j) {
    const int st = j & 1;
    cp_async_wait<0>();
    wg::fence_proxy_async();
    __syncthreads();  // tile j is in place, and every warpgroup is done with tile j - 1's stage
    if (j < qt) {
      load_tile(sK[st ^ 1], k, tok0 + (j + 1) * kTile, H, h);
      load_tile(sV[st ^ 1], v, tok0 + (j + 1) * kTile, H, h);
    }
    cp_async_commit();
    // S = Q Kᵀ over d = 128: k-steps of 16 columns, 4 per 64-column atom.
    float s[64];
    wg::wg_fence();
#pragma unroll
    for (int t = 0; t < 8; ++t) {
      const uint32_t off = (t / 4) * kAtomBytes + (t % 4) * 32;
      wg::wgmma_ss<__nv_bfloat16, 0>(s, wg::make_desc(q_wg + off, 16, 1024),
                                     wg::make_desc(sK[st] + off, 16, 1024), t > 0 ? 1 : 0);
    }
    wg::wg_commit();
    wg::wg_wait<0>();
    // P = silu(α S) / S_len in bf16, as the A fragments of the 8 k-steps of P V.
    uint32_t p[8][4];
    const int row_a = qt * kTile + wgi * 64 + warp * 16 + g;  // query position of regs 0, 1
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float x[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float a = alpha * s[4 * i + e];
        float y = __fdividef(a, 1.0f + __expf(-a)) * inv_len;
        const int row = row_a + 8 * (e / 2), col = j * kTile + 8 * i + 2 * qd + (e % 2);
        if (j == qt && col > row) y = 0.0f;
        x[e] = y;
      }
      // n8 block i: columns 8i .. 8i + 7 = half of k-step i / 2 (a0/a1 for even i, a2/a3 for odd).
      const int t = i / 2, hi = (i % 2) * 2;
      p[t][hi + 0] = pack2(__float2bfloat16(x[0]), __float2bfloat16(x[1]));
      p[t][hi + 1] = pack2(__float2bfloat16(x[2]), __float2bfloat16(x[3]));
    }
    // O += P V: V's keys are the k dimension (16 keys = 2048 bytes per k-step), dv the N dimension
    // in two 64-column atoms.
    wg::wg_fence();
#pragma unroll
    for (int t = 0; t < 8; ++t) {
#if HSTU_V_LBO_IS_ATOM
      const uint64_t dv = wg::make_desc(sV[st] + t * 2048, kAtomBytes, 1024);
#else
      const uint64_t dv = wg::make_desc(sV[st] + t * 2048, 1024, kAtomBytes);
#endif
      wg::wgmma_rs<__nv_bfloat16, 1>(o, p[t], dv, 1);
    }
    wg::wg_commit();
    wg::wg_wait<0>();
  }
  // Epilogue: rows wgi·64 + warp·16 + g (+ 8), columns 8i + 2qd (+ 1).
  const int64_t row0 = tok0 + qt * kTile + wgi * 64 + warp * 16 + g;
#pragma unroll
  for (int i = 0; i < 16; ++i)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      __nv_bfloat162 w;
      w.x = __float2bfloat16(o[4 * i + 2 * hh]);
      w.y = __float2bfloat16(o[4 * i + 2 * hh + 1]);
      *reinterpret_cast<__nv_bfloat162*>(out + ((row0 + 8 * hh) * H + h) * kD + 8 * i + 2 * qd) = w;
    }
}

struct Problem {
  int B, S, H;
  std::vector<__nv_bfloat16> q, k, v;
};

Problem make(int B, int S, int H, uint32_t seed) {
  Problem p{B, S, H, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const size_t count = static_cast<size_t>(B) * S * H * kD;
  for (auto* t : {&p.q, &p.k, &p.v}) {
    t->resize(count);
    for (auto& x : *t) x = __float2bfloat16(n(rng));
  }
  return p;
}

float run(const Problem& p, std::vector<__nv_bfloat16>* out, int reps) {
  const size_t count = p.q.size();
  __nv_bfloat16 *dq, *dk, *dv, *dout;
  CK(cudaMalloc(&dq, count * 2));
  CK(cudaMalloc(&dk, count * 2));
  CK(cudaMalloc(&dv, count * 2));
  CK(cudaMalloc(&dout, count * 2));
  CK(cudaMemcpy(dq, p.q.data(), count * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dk, p.k.data(), count * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dv, p.v.data(), count * 2, cudaMemcpyHostToDevice));
  CK(cudaMemset(dout, 0xff, count * 2));  // poison (NaN)
  CK(cudaFuncSetAttribute(hstu_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const dim3 grid(static_cast<unsigned>(p.B * p.H * (p.S / kTile)));
  auto launch = [&] {
    hstu_fwd_kernel<<<grid, kThreads, kSmem>>>(dq, dk, dv, dout, p.B, p.S, p.H,
                                               1.0f / std::sqrt(static_cast<float>(kD)),
                                               1.0f / static_cast<float>(p.S));
  };
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  if (out) {
    out->resize(count);
    CK(cudaMemcpy(out->data(), dout, count * 2, cudaMemcpyDeviceToHost));
  }
  const float ms = experiments::mean_ms(launch, reps);
  CK(cudaFree(dq));
  CK(cudaFree(dk));
  CK(cudaFree(dv));
  CK(cudaFree(dout));
  return ms;
}

}  // namespace

int main() {
  // Accuracy: every output of a small problem against fp64 (inputs as bf16, P not rounded).
  const Problem small = make(2, 1024, 2, 1);
  std::vector<__nv_bfloat16> got;
  run(small, &got, 0);
  const double alpha = 1.0 / std::sqrt(static_cast<double>(kD)), inv = 1.0 / small.S;
  double max_err = 0, max_ref = 0;
  std::vector<double> acc(kD);
  for (int b = 0; b < small.B; ++b)
    for (int h = 0; h < small.H; ++h)
      for (int t = 0; t < small.S; ++t) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const size_t qi = ((static_cast<size_t>(b) * small.S + t) * small.H + h) * kD;
        for (int s = 0; s <= t; ++s) {
          const size_t ki = ((static_cast<size_t>(b) * small.S + s) * small.H + h) * kD;
          double dot = 0;
          for (int c = 0; c < kD; ++c)
            dot += double(__bfloat162float(small.q[qi + c])) * __bfloat162float(small.k[ki + c]);
          const double a = alpha * dot, w = a / (1.0 + std::exp(-a)) * inv;
          for (int c = 0; c < kD; ++c) acc[c] += w * __bfloat162float(small.v[ki + c]);
        }
        for (int c = 0; c < kD; ++c) {
          const double gv = __bfloat162float(got[qi + c]);
          const double e = std::fabs(gv - acc[c]);
          max_err = std::isnan(gv) ? INFINITY : std::max(max_err, e);
          max_ref = std::max(max_ref, std::fabs(acc[c]));
        }
      }
  const bool ok = max_err <= 1e-2 * max_ref;
  std::printf("accuracy B=2 S=1024 H=2: max |err| %.3g, max |ref| %.3g -> %s (V LBO is atom: %d)\n",
              max_err, max_ref, ok ? "PASS" : "FAIL", HSTU_V_LBO_IS_ATOM);
  // Speed at the issue's shape without targets.
  const Problem big = make(32, 4096, 4, 2);
  const float ms = run(big, nullptr, 10);
  const double valid = double(big.B) * big.H * (double(big.S) * (big.S + 1) / 2);
  const double flops = valid * 2.0 * (kD + kD);
  std::printf("B=32 S=4096 H=4 d=128 causal: %.3f ms, %.1f TFLOP/s (hstu_attention.md §6 FLOPs)\n",
              ms, flops / ms / 1e9);
  return ok ? 0 : 1;
}
