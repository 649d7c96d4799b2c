// bench/experiments/hstu_bwd_wgmma.cu: a first HSTU backward on Hopper's wgmma (issue 4),
// standalone, the groundwork of a cuda_sm90 backward.
//
// The problem: B sequences of S tokens (full length), H heads, d = dv = 128, bf16, causal HSTU
// with α = 1/sqrt(d) and the output scale s = 1/S (hstu_attention.md §1):
//   x = α q·k,  σ = sigmoid(x),  P = s·SiLU(x),  SiLU'(x) = σ (1 + x (1 − σ)),
//   dP = s·(dO · v),  G = SiLU'(x) dP  (masked: 0 for k > q),
//   dV = Pᵀ dO,  dK = α Gᵀ Q,  dQ = α G K.
// Two deterministic kernels (no atomics), like cuda_sm80_fa's backward:
//   key kernel  (dK, dV): a CTA owns 128 keys of one (b, h), two warpgroups of 64 keys; it walks
//                the 64-row query tiles that see its keys. Per tile and warpgroup:
//                  Sᵀ = K Qᵀ and dPᵀ = V dOᵀ   8 + 8 SS wgmma m64n64k16 (all operands K-major)
//                  Pᵀ, Gᵀ in registers (the accumulator layout is the RS A fragment)
//                  dV += Pᵀ dO, dK += Gᵀ Q      4 + 4 RS wgmma m64n128k16 (dO, Q MN-major)
//   query kernel (dQ): a CTA owns 128 query rows, two warpgroups of 64; it walks the 64-key tiles
//                up to the diagonal: S = Q Kᵀ, dP = dO Vᵀ (SS m64n64), G in registers,
//                dQ += G K (RS m64n128, K MN-major).
// Seven tile products instead of the five of an atomic dQ. Loads are cp.async into the 128-byte
// swizzled layout (two stages of the streamed tiles, a __syncthreads per tile): the first step
// is correctness and the products' rate; TMA and warp specialisation come after, as in the
// forward. SiLU and its derivative use one MUFU op: σ = 0.5 + 0.5 tanh(x / 2).
//
// The host checks dq, dk, dv against fp64 on one 128-token tile (B=1, H=1) and on B=2, S=512,
// H=2 (printing the first mismatches when one fails), then times the issue's B=32, S=4096, H=4
// (no targets), FLOPs by the convention 2.5 x the forward's.
//
//   nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a -o /tmp/hstu_bwd_wgmma \
//     bench/experiments/hstu_bwd_wgmma.cu && /tmp/hstu_bwd_wgmma
// Written 2026-11-30 (session 5) and compiled here for sm_90a; not yet run on a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "../../src/core/cuda/mma.cuh"  // cp.async wrappers
#include "../../src/core/cuda/sm90.cuh"
#include "timing.cuh"

namespace {

namespace wg = recops::core::cuda::sm90;
using bf16 = __nv_bfloat16;
using recops::core::cuda::cp_async16;
using recops::core::cuda::cp_async_commit;
using recops::core::cuda::cp_async_wait;

constexpr int kD = 128;        // d = dv
constexpr int kThreads = 256;  // two warpgroups
constexpr int kBig = 128;      // rows of the resident tiles (keys of the key kernel, queries of
                               // the query kernel)
constexpr int kSmall = 64;     // rows of the streamed tiles
constexpr uint32_t kBigAtom = kBig * 128, kSmallAtom = kSmall * 128;  // bytes of one 64-col atom
constexpr uint32_t kBigTile = 2 * kBigAtom, kSmallTile = 2 * kSmallAtom;
constexpr int kSmem = 2 * kBigTile + 4 * kSmallTile + 1024;  // 2 resident + 2 x 2 streamed

__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
__device__ __forceinline__ float tanh_fast(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// kRows rows (tokens row0 ..) of head h of a [tokens, H, 128] tensor into a swizzled tile at
// `dst` (two atoms of kRows x 64 elements, kRows * 128 bytes apart), all 256 threads.
template <int kRows>
__device__ __forceinline__ void load_rows(uint32_t dst, const bf16* src, int64_t row0, int H,
                                          int h) {
  for (int i = threadIdx.x; i < kRows * 16; i += kThreads) {
    const int r = i / 16, c = i % 16;
    cp_async16(dst + (c / 8) * (kRows * 128) + wg::sw128(r, (c % 8) * 8),
               src + ((row0 + r) * H + h) * kD + c * 8, true);
  }
}

// The two 64 x 64 products of a warpgroup: acc_a = A1 B1ᵀ and acc_b = A2 B2ᵀ over d = 128, A1/A2
// this warpgroup's 64 rows of a resident 128-row tile (byte offset a_row0 inside each atom),
// B1/B2 streamed 64-row tiles; all K-major.
__device__ __forceinline__ void two_products(float (&acc_a)[32], float (&acc_b)[32], uint32_t a1,
                                             uint32_t b1, uint32_t a2, uint32_t b2,
                                             uint32_t a_row0) {
  wg::wg_fence();
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    const uint32_t oa = (t / 4) * kBigAtom + a_row0 + (t % 4) * 32;
    const uint32_t ob = (t / 4) * kSmallAtom + (t % 4) * 32;
    wg::wgmma_ss_n64<bf16>(acc_a, wg::make_desc(a1 + oa, 16, 1024),
                           wg::make_desc(b1 + ob, 16, 1024), t > 0 ? 1 : 0);
  }
#pragma unroll
  for (int t = 0; t < 8; ++t) {
    const uint32_t oa = (t / 4) * kBigAtom + a_row0 + (t % 4) * 32;
    const uint32_t ob = (t / 4) * kSmallAtom + (t % 4) * 32;
    wg::wgmma_ss_n64<bf16>(acc_b, wg::make_desc(a2 + oa, 16, 1024),
                           wg::make_desc(b2 + ob, 16, 1024), t > 0 ? 1 : 0);
  }
  wg::wg_commit();
  wg::wg_wait<0>();
}

// The 32 accumulators of a 64 x 64 tile as the A fragments of 4 k-steps of an RS wgmma.
__device__ __forceinline__ void to_frags(const float (&a)[32], uint32_t (&f)[4][4]) {
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    f[i / 2][(i % 2) * 2 + 0] = pack2(a[4 * i + 0], a[4 * i + 1]);
    f[i / 2][(i % 2) * 2 + 1] = pack2(a[4 * i + 2], a[4 * i + 3]);
  }
}

// acc (64 x 128) += F (64 x 64, fragments) · T, T a streamed 64-row tile read MN-major (its rows
// are the k dimension, its 128 columns the n dimension in two atoms).
__device__ __forceinline__ void rs_product(float (&acc)[64], const uint32_t (&f)[4][4],
                                           uint32_t tile) {
#pragma unroll
  for (int t = 0; t < 4; ++t)
    wg::wgmma_rs<bf16, 1>(acc, f[t], wg::make_desc(tile + t * 2048, kSmallAtom, 1024), 1);
}

// SiLU and its derivative of x (= α times the score): P = s·SiLU(x), G = s·SiLU'(x)·(dO·v).
__device__ __forceinline__ void silu_pair(float x, float dov, float s, bool valid, float* p,
                                          float* gg) {
  const float sg = fmaf(0.5f, tanh_fast(0.5f * x), 0.5f);
  const float silu = x * sg;
  const float ds = sg * fmaf(x, 1.f - sg, 1.f);
  *p = valid ? silu * s : 0.f;
  *gg = valid ? ds * dov * s : 0.f;
}

// ---- key kernel: dK, dV ----------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads, 1)
    hstu_bwd_kv_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* dout, bf16* dk,
                       bf16* dv, int B, int S, int H, float alpha, float scale) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base =
      (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;
  const uint32_t sK = base, sV = base + kBigTile;
  const uint32_t sQ[2] = {base + 2 * kBigTile, base + 2 * kBigTile + 2 * kSmallTile};
  const uint32_t sdO[2] = {base + 2 * kBigTile + kSmallTile, base + 2 * kBigTile + 3 * kSmallTile};
  const int nkt = S / kBig, nqt = S / kSmall;
  const int kt = static_cast<int>(blockIdx.x % nkt);  // key tile 0 (most query tiles) first
  const int bh = static_cast<int>(blockIdx.x / nkt), b = bh / H, h = bh % H;
  const int64_t tok0 = static_cast<int64_t>(b) * S;
  const int k0 = kt * kBig;
  const int wgi = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;
  const int qt0 = k0 / kSmall;  // the first query tile that sees a key of this tile

  load_rows<kBig>(sK, k, tok0 + k0, H, h);
  load_rows<kBig>(sV, v, tok0 + k0, H, h);
  load_rows<kSmall>(sQ[0], q, tok0 + qt0 * kSmall, H, h);
  load_rows<kSmall>(sdO[0], dout, tok0 + qt0 * kSmall, H, h);
  cp_async_commit();

  float acc_k[64], acc_v[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc_k[i] = acc_v[i] = 0.f;
  const int key_a = k0 + wgi * 64 + warp * 16 + g;  // this thread's keys: key_a, key_a + 8
  for (int qt = qt0; qt < nqt; ++qt) {
    const int st = (qt - qt0) & 1;
    cp_async_wait<0>();
    wg::fence_proxy_async();
    __syncthreads();  // tile qt is in place; everyone is done with the other stage
    if (qt + 1 < nqt) {
      load_rows<kSmall>(sQ[st ^ 1], q, tok0 + (qt + 1) * kSmall, H, h);
      load_rows<kSmall>(sdO[st ^ 1], dout, tok0 + (qt + 1) * kSmall, H, h);
    }
    cp_async_commit();
    float s_t[32], dp_t[32];  // Sᵀ and (dO·v)ᵀ: rows = keys, columns = queries
    two_products(s_t, dp_t, sK, sQ[st], sV, sdO[st], wgi * 8192);
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = key_a + 8 * (e / 2), query = qt * kSmall + 8 * i + 2 * qd + (e % 2);
        silu_pair(alpha * s_t[4 * i + e], dp_t[4 * i + e], scale, key <= query, &s_t[4 * i + e],
                  &dp_t[4 * i + e]);
      }
    uint32_t pf[4][4], gf[4][4];
    to_frags(s_t, pf);
    to_frags(dp_t, gf);
    wg::wg_fence();
    rs_product(acc_v, pf, sdO[st]);  // dV += Pᵀ dO
    rs_product(acc_k, gf, sQ[st]);   // dK += Gᵀ Q (α at the end)
    wg::wg_commit();
    wg::wg_wait<0>();
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t row = tok0 + key_a + 8 * u;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      const int64_t at = (row * H + h) * kD + 8 * j + 2 * qd;
      *reinterpret_cast<uint32_t*>(dk + at) =
          pack2(alpha * acc_k[4 * j + 2 * u], alpha * acc_k[4 * j + 2 * u + 1]);
      *reinterpret_cast<uint32_t*>(dv + at) = pack2(acc_v[4 * j + 2 * u], acc_v[4 * j + 2 * u + 1]);
    }
  }
}

// ---- query kernel: dQ --------------------------------------------------------------------------

__global__ void __launch_bounds__(kThreads, 1)
    hstu_bwd_q_kernel(const bf16* q, const bf16* k, const bf16* v, const bf16* dout, bf16* dq,
                      int B, int S, int H, float alpha, float scale) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t base =
      (static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw)) + 1023u) & ~1023u;
  const uint32_t sQ = base, sdO = base + kBigTile;
  const uint32_t sK[2] = {base + 2 * kBigTile, base + 2 * kBigTile + 2 * kSmallTile};
  const uint32_t sV[2] = {base + 2 * kBigTile + kSmallTile, base + 2 * kBigTile + 3 * kSmallTile};
  const int nqt = S / kBig;
  const int qt = nqt - 1 - static_cast<int>(blockIdx.x % nqt);  // last query tile first
  const int bh = static_cast<int>(blockIdx.x / nqt), b = bh / H, h = bh % H;
  const int64_t tok0 = static_cast<int64_t>(b) * S;
  const int q0 = qt * kBig;
  const int wgi = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, qd = lane % 4;
  const int nkt = (q0 + kBig) / kSmall;  // key tiles up to the diagonal

  load_rows<kBig>(sQ, q, tok0 + q0, H, h);
  load_rows<kBig>(sdO, dout, tok0 + q0, H, h);
  load_rows<kSmall>(sK[0], k, tok0, H, h);
  load_rows<kSmall>(sV[0], v, tok0, H, h);
  cp_async_commit();

  float acc_q[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc_q[i] = 0.f;
  const int row_a = q0 + wgi * 64 + warp * 16 + g;  // this thread's rows: row_a, row_a + 8
  for (int kt = 0; kt < nkt; ++kt) {
    const int st = kt & 1;
    cp_async_wait<0>();
    wg::fence_proxy_async();
    __syncthreads();
    if (kt + 1 < nkt) {
      load_rows<kSmall>(sK[st ^ 1], k, tok0 + (kt + 1) * kSmall, H, h);
      load_rows<kSmall>(sV[st ^ 1], v, tok0 + (kt + 1) * kSmall, H, h);
    }
    cp_async_commit();
    float s_a[32], dp_a[32];  // S and dO·v: rows = queries, columns = keys
    two_products(s_a, dp_a, sQ, sK[st], sdO, sV[st], wgi * 8192);
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int row = row_a + 8 * (e / 2), key = kt * kSmall + 8 * i + 2 * qd + (e % 2);
        float p_unused;
        silu_pair(alpha * s_a[4 * i + e], dp_a[4 * i + e], scale, key <= row, &p_unused,
                  &dp_a[4 * i + e]);
      }
    uint32_t gf[4][4];
    to_frags(dp_a, gf);
    wg::wg_fence();
    rs_product(acc_q, gf, sK[st]);  // dQ += G K (α at the end)
    wg::wg_commit();
    wg::wg_wait<0>();
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int64_t row = tok0 + row_a + 8 * u;
#pragma unroll
    for (int j = 0; j < 16; ++j)
      *reinterpret_cast<uint32_t*>(dq + (row * H + h) * kD + 8 * j + 2 * qd) =
          pack2(alpha * acc_q[4 * j + 2 * u], alpha * acc_q[4 * j + 2 * u + 1]);
  }
}

struct Problem {
  int B, S, H;
  std::vector<bf16> q, k, v, dout;
};

Problem make(int B, int S, int H, uint32_t seed) {
  Problem p{B, S, H, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const size_t count = static_cast<size_t>(B) * S * H * kD;
  for (auto* t : {&p.q, &p.k, &p.v, &p.dout}) {
    t->resize(count);
    for (auto& x : *t) x = __float2bfloat16(n(rng));
  }
  return p;
}

// Runs both kernels (outputs poisoned first); returns the time of `reps` repetitions (ms each).
float run(const Problem& p, std::vector<bf16>* dq, std::vector<bf16>* dk, std::vector<bf16>* dv,
          int reps) {
  const size_t count = p.q.size(), bytes = count * 2;
  bf16 *q, *k, *v, *dout, *gq, *gk, *gv;
  for (bf16** x : {&q, &k, &v, &dout, &gq, &gk, &gv}) CK(cudaMalloc(x, bytes));
  CK(cudaMemcpy(q, p.q.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(k, p.k.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(v, p.v.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dout, p.dout.data(), bytes, cudaMemcpyHostToDevice));
  for (bf16* x : {gq, gk, gv}) CK(cudaMemset(x, 0xff, bytes));  // poison (NaN)
  CK(cudaFuncSetAttribute(hstu_bwd_kv_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CK(cudaFuncSetAttribute(hstu_bwd_q_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  const float alpha = 1.0f / std::sqrt(static_cast<float>(kD)), scale = 1.0f / p.S;
  const unsigned bh = static_cast<unsigned>(p.B * p.H);
  auto launch = [&] {
    hstu_bwd_kv_kernel<<<bh*(p.S / kBig), kThreads, kSmem>>>(q, k, v, dout, gk, gv, p.B, p.S, p.H,
                                                             alpha, scale);
    hstu_bwd_q_kernel<<<bh*(p.S / kBig), kThreads, kSmem>>>(q, k, v, dout, gq, p.B, p.S, p.H, alpha,
                                                            scale);
  };
  launch();
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  if (dq) {
    const std::pair<std::vector<bf16>*, bf16*> outs[3] = {{dq, gq}, {dk, gk}, {dv, gv}};
    for (const auto& [h, d] : outs) {
      h->resize(count);
      CK(cudaMemcpy(h->data(), d, bytes, cudaMemcpyDeviceToHost));
    }
  }
  const float ms = experiments::mean_ms(launch, reps);
  if (reps > 0) {
    const float kv_ms = experiments::mean_ms(
        [&] {
          hstu_bwd_kv_kernel<<<bh*(p.S / kBig), kThreads, kSmem>>>(q, k, v, dout, gk, gv, p.B, p.S,
                                                                   p.H, alpha, scale);
        },
        reps);
    const float q_ms = experiments::mean_ms(
        [&] {
          hstu_bwd_q_kernel<<<bh*(p.S / kBig), kThreads, kSmem>>>(q, k, v, dout, gq, p.B, p.S, p.H,
                                                                  alpha, scale);
        },
        reps);
    std::printf("key kernel %.3f ms, query kernel %.3f ms\n", kv_ms, q_ms);
  }
  for (bf16* x : {q, k, v, dout, gq, gk, gv}) CK(cudaFree(x));
  return ms;
}

// Checks dq, dk, dv of one problem against fp64; on a failure prints the first mismatches
// (token, head, column) so that one device run says where a layout is wrong.
bool check_against_fp64(int B, int S, int H) {
  const Problem sm = make(B, S, H, 1);
  std::vector<bf16> gq, gk, gv;
  run(sm, &gq, &gk, &gv, 0);
  const double alpha = 1.0 / std::sqrt(static_cast<double>(kD)), scale = 1.0 / S;
  const size_t count = sm.q.size();
  std::vector<double> rq(count, 0.0), rk(count, 0.0), rv(count, 0.0);
  auto f = [](bf16 x) { return static_cast<double>(__bfloat162float(x)); };
  for (int b = 0; b < sm.B; ++b)
    for (int h = 0; h < H; ++h)
      for (int r = 0; r < S; ++r) {
        const size_t qi = ((static_cast<size_t>(b) * S + r) * H + h) * kD;
        for (int c = 0; c <= r; ++c) {
          const size_t ki = ((static_cast<size_t>(b) * S + c) * H + h) * kD;
          double dot = 0, dov = 0;
          for (int j = 0; j < kD; ++j) {
            dot += f(sm.q[qi + j]) * f(sm.k[ki + j]);
            dov += f(sm.dout[qi + j]) * f(sm.v[ki + j]);
          }
          const double x = alpha * dot, sg = 1.0 / (1.0 + std::exp(-x));
          const double p = scale * x * sg, g = sg * (1.0 + x * (1.0 - sg)) * scale * dov;
          for (int j = 0; j < kD; ++j) {
            rv[ki + j] += p * f(sm.dout[qi + j]);
            rk[ki + j] += alpha * g * f(sm.q[qi + j]);
            rq[qi + j] += alpha * g * f(sm.k[ki + j]);
          }
        }
      }
  bool ok = true;
  struct Out {
    const char* name;
    const std::vector<bf16>* got;
    const std::vector<double>* ref;
  };
  for (const Out& o : {Out{"dq", &gq, &rq}, Out{"dk", &gk, &rk}, Out{"dv", &gv, &rv}}) {
    const char* name = o.name;
    const std::vector<bf16>* got = o.got;
    const std::vector<double>* ref = o.ref;
    double max_err = 0, max_ref = 0, se = 0, sr = 0;
    for (size_t i = 0; i < count; ++i) {
      const double x = f((*got)[i]), e = std::fabs(x - (*ref)[i]);
      max_err = std::isnan(x) ? INFINITY : std::max(max_err, e);
      max_ref = std::max(max_ref, std::fabs((*ref)[i]));
      se += e * e;
      sr += (*ref)[i] * (*ref)[i];
    }
    const bool pass = max_err <= 2e-2 * max_ref;
    ok = ok && pass;
    std::printf("B=%d S=%d H=%d %s: max |err| %.3g, max |ref| %.3g, rel L2 %.3g -> %s\n", B, S, H,
                name, max_err, max_ref, std::sqrt(se / std::max(sr, 1e-300)),
                pass ? "PASS" : "FAIL");
    for (size_t i = 0, shown = 0; !pass && i < count && shown < 8; ++i) {
      const double x = f((*got)[i]);
      if (!(std::fabs(x - (*ref)[i]) <= 2e-2 * max_ref)) {
        const size_t col = i % kD, head = (i / kD) % H, tok = i / kD / H;
        std::printf("  %s[token %zu, head %zu, col %zu] = %.5g, fp64 %.5g\n", name, tok, head, col,
                    x, (*ref)[i]);
        ++shown;
      }
    }
  }
  return ok;
}

}  // namespace

int main() {
  // Accuracy first on one 128-token tile (diagonal masks only), then on several tiles.
  bool ok = check_against_fp64(1, 128, 1);
  ok = check_against_fp64(2, 512, 2) && ok;
  // Speed at the issue's shape without targets.
  const Problem big = make(32, 4096, 4, 2);
  const float ms = run(big, nullptr, nullptr, nullptr, 5);
  const double valid = double(big.B) * big.H * (double(big.S) * (big.S + 1) / 2);
  const double flops = 2.5 * valid * 2.0 * (kD + kD);
  std::printf(
      "B=32 S=4096 H=4 d=128 causal backward (both kernels): %.3f ms, %.1f TFLOP/s "
      "(2.5 x the forward's FLOPs)\n",
      ms, flops / ms / 1e9);
  return ok ? 0 : 1;
}
