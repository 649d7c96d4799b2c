// wgmma_probe.cu measured which wgmma descriptor readings of src/core/cuda/sm90.cuh hold, and the
// wgmma rate (H200, 59e9891: variants 0 1 3 4 exact, 2 fails; 970 TFLOP/s): wgmma_probe_59e9891.log
//
// The HSTU and block-sparse attention goals need WGMMA kernels (sm_90a). Before writing them, this
// probe checks the pieces they rest on, each against a host product on exact small values (k/8,
// so every product and sum is exact in fp32 and a right layout gives an error of exactly 0):
//   0  SS: A (64 x 64) and B (128 x 64) both K-major in shared memory with the 128-byte swizzle,
//      C = A·Bᵀ (the QKᵀ of attention); k-steps advance the descriptors' start by 32 bytes.
//   1  SS: B stored [K][N] (N contiguous, MN-major: the V of P·V), transposed by the instruction
//      (tnspB = 1), atoms of 64 columns 8 KiB apart; LBO = atom stride, SBO = 8-row group stride.
//   2  as 1 with LBO and SBO swapped (one of 1 and 2 is the right reading).
//   3  RS: A from registers in the mma.sync m16n8k16 A-fragment layout, B as in 0 (P·V with P in
//      registers needs this with B as in 1 or 2).
//   4  RS with B MN-major as in 1.
// then times variant 0's instruction stream (no loads) on every SM: the wgmma ceiling.
//
// Not built by CMake. On the GPU machine (one `run` call):
//   nvcc -std=c++17 -O2 -gencode arch=compute_90a,code=sm_90a -o /tmp/wgmma_probe \
//     bench/experiments/wgmma_probe.cu && /tmp/wgmma_probe
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "../../src/core/cuda/sm90.cuh"
#include "timing.cuh"

namespace {

namespace wg = recops::core::cuda::sm90;
using wg::fence_proxy_async;
using wg::make_desc;
using wg::sw128;
using wg::wg_commit;
using wg::wg_fence;

// The bf16 pair of an RS wgmma A-fragment register (lo in the low half).
__device__ __forceinline__ uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}

__device__ __forceinline__ void wg_wait0() {
  wg::wg_wait<0>();
}
template <int kTnspB>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  wg::wgmma_ss<__nv_bfloat16, kTnspB>(d, da, db, scale_d);
}
template <int kTnspB>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db,
                                         int scale_d) {
  wg::wgmma_rs<__nv_bfloat16, kTnspB>(d, a, db, scale_d);
}

constexpr int kM = 64, kN = 128, kK = 64;

// One warpgroup computes the 64 x 128 tile C of `variant` (see the top of the file).
__global__ void __launch_bounds__(128) probe_kernel(const __nv_bfloat16* A,   // [64][64]
                                                    const __nv_bfloat16* Bt,  // [128][64]
                                                    const __nv_bfloat16* B2,  // [64][128]
                                                    float* C, int variant) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw + 1023u) & ~1023u;
  unsigned char* sm = smem_raw + (base - raw);
  unsigned char* sA = sm;         // 8 KiB
  unsigned char* sB = sm + 8192;  // 16 KiB
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, q = lane % 4;
  for (int i = tid; i < kM * kK; i += 128)
    *reinterpret_cast<__nv_bfloat16*>(sA + sw128(i / kK, i % kK)) = A[i];
  const bool mn_major = variant == 1 || variant == 2 || variant == 4;
  if (!mn_major) {
    for (int i = tid; i < kN * kK; i += 128)
      *reinterpret_cast<__nv_bfloat16*>(sB + sw128(i / kK, i % kK)) = Bt[i];
  } else {
    for (int i = tid; i < kK * kN; i += 128) {
      const int k = i / kN, n = i % kN;
      *reinterpret_cast<__nv_bfloat16*>(sB + (n / 64) * 8192 + sw128(k, n % 64)) = B2[i];
    }
  }
  fence_proxy_async();
  __syncthreads();
  const uint32_t a_addr = base, b_addr = base + 8192;
  float d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  uint32_t af[4][4];
  if (variant >= 3)
    for (int s = 0; s < 4; ++s) {
      const int r0 = 16 * warp + g, c0 = 16 * s + 2 * q;
      af[s][0] = pack2(A[r0 * kK + c0], A[r0 * kK + c0 + 1]);
      af[s][1] = pack2(A[(r0 + 8) * kK + c0], A[(r0 + 8) * kK + c0 + 1]);
      af[s][2] = pack2(A[r0 * kK + c0 + 8], A[r0 * kK + c0 + 9]);
      af[s][3] = pack2(A[(r0 + 8) * kK + c0 + 8], A[(r0 + 8) * kK + c0 + 9]);
    }
  wg_fence();
  for (int s = 0; s < 4; ++s) {
    const uint64_t da = make_desc(a_addr + 32 * s, 16, 1024);
    const uint64_t db_k = make_desc(b_addr + 32 * s, 16, 1024);
    const uint64_t db_mn1 = make_desc(b_addr + 2048 * s, 8192, 1024);
    const uint64_t db_mn2 = make_desc(b_addr + 2048 * s, 1024, 8192);
    const int sc = s > 0 ? 1 : 0;
    switch (variant) {
      case 0: wgmma_ss<0>(d, da, db_k, sc); break;
      case 1: wgmma_ss<1>(d, da, db_mn1, sc); break;
      case 2: wgmma_ss<1>(d, da, db_mn2, sc); break;
      case 3: wgmma_rs<0>(d, af[s], db_k, sc); break;
      default: wgmma_rs<1>(d, af[s], db_mn1, sc); break;
    }
  }
  wg_commit();
  wg_wait0();
  // Accumulator layout: warp w rows 16w + g (+ 8), columns 8i + 2q (+ 1).
  for (int i = 0; i < 16; ++i)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 2; ++e)
        C[(16 * warp + g + 8 * h) * kN + 8 * i + 2 * q + e] = d[4 * i + 2 * h + e];
}

// Variant 0's instruction stream `reps` times from shared memory already filled (contents do not
// matter for timing): the wgmma rate with no loads. One warpgroup per CTA, 2 CTAs per SM.
__global__ void __launch_bounds__(128) rate_kernel(float* sink, int reps) {
  extern __shared__ unsigned char smem_raw[];
  const uint32_t raw = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t base = (raw + 1023u) & ~1023u;
  for (int i = threadIdx.x; i < 24576 / 4; i += 128)
    reinterpret_cast<uint32_t*>(smem_raw + (base - raw))[i] = 0x3c003c00u ^ i;
  fence_proxy_async();
  __syncthreads();
  float d[64];
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  wg_fence();
  for (int r = 0; r < reps; ++r) {
    for (int s = 0; s < 4; ++s)
      wgmma_ss<0>(d, make_desc(base + 32 * s, 16, 1024), make_desc(base + 8192 + 32 * s, 16, 1024),
                  1);
    wg_commit();
    asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
  }
  wg_wait0();
  float s = 0;
  for (int i = 0; i < 64; ++i) s += d[i];
  if (s == 12345.0f) sink[threadIdx.x] = s;
}

}  // namespace

int main() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> v(-8, 8);
  std::vector<__nv_bfloat16> A(kM * kK), Bt(kN * kK), B2(kK * kN);
  std::vector<float> a(kM * kK), bt(kN * kK);
  for (int i = 0; i < kM * kK; ++i) {
    a[i] = v(rng) / 8.0f;
    A[i] = __float2bfloat16(a[i]);
  }
  for (int i = 0; i < kN * kK; ++i) {
    bt[i] = v(rng) / 8.0f;
    Bt[i] = __float2bfloat16(bt[i]);
  }
  for (int k = 0; k < kK; ++k)  // B2 = Btᵀ, so every variant has the same expected C = A·Btᵀ
    for (int n = 0; n < kN; ++n) B2[k * kN + n] = Bt[n * kK + k];
  std::vector<double> ref(kM * kN, 0.0);
  for (int m = 0; m < kM; ++m)
    for (int n = 0; n < kN; ++n)
      for (int k = 0; k < kK; ++k) ref[m * kN + n] += double(a[m * kK + k]) * bt[n * kK + k];
  __nv_bfloat16 *dA, *dBt, *dB2;
  float* dC;
  CK(cudaMalloc(&dA, A.size() * 2));
  CK(cudaMalloc(&dBt, Bt.size() * 2));
  CK(cudaMalloc(&dB2, B2.size() * 2));
  CK(cudaMalloc(&dC, kM * kN * 4));
  CK(cudaMemcpy(dA, A.data(), A.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dBt, Bt.data(), Bt.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB2, B2.data(), B2.size() * 2, cudaMemcpyHostToDevice));
  const int smem = 24576 + 1024;
  CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CK(cudaFuncSetAttribute(rate_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const char* names[] = {"SS, B K-major", "SS, B MN-major, LBO = atom stride",
                         "SS, B MN-major, SBO = atom stride", "RS, B K-major",
                         "RS, B MN-major, LBO = atom stride"};
  int fails = 0;
  std::vector<float> C(kM * kN);
  for (int variant = 0; variant < 5; ++variant) {
    CK(cudaMemset(dC, 0xff, kM * kN * 4));  // poison: NaN
    probe_kernel<<<1, 128, smem>>>(dA, dBt, dB2, dC, variant);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(C.data(), dC, C.size() * 4, cudaMemcpyDeviceToHost));
    double err = 0;
    for (int i = 0; i < kM * kN; ++i) {
      const double e = std::fabs(C[i] - ref[i]);
      err = std::isnan(e) ? INFINITY : std::max(err, e);
    }
    std::printf("variant %d (%s): max |err| = %g -> %s\n", variant, names[variant], err,
                err == 0 ? "PASS" : "FAIL");
    fails += err != 0;
  }
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  float* sink;
  CK(cudaMalloc(&sink, 128 * 4));
  const int reps = 20000, grid = 2 * sms;
  rate_kernel<<<grid, 128, smem>>>(sink, 10);
  CK(cudaGetLastError());
  const float ms = experiments::mean_ms([&] { rate_kernel<<<grid, 128, smem>>>(sink, reps); }, 1);
  const double flops = 2.0 * kM * kN * kK * double(reps) * grid;
  std::printf("wgmma m64n128k16 SS from shared memory, %d CTAs x %d reps: %.3f ms, %.0f TFLOP/s\n",
              grid, reps, ms, flops / ms / 1e9);
  return fails == 0 ? 0 : 1;
}
