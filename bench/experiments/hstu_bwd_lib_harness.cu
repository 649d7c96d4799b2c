// bench/experiments/hstu_bwd_lib_harness.cu: the library's cuda_sm90 backward kernels
// (src/ops/hstu/hstu_attn/cuda/bwd_sm90.cuh) launched from the harness of hstu_bwd_wgmma.cu: the same
// shape (B=32 S=4096 H=4 d=dv=128, bf16, causal), the same host-generated data, the same event
// timing. It separates the kernels' code from their surroundings: the library's kernels took
// 3.39 / 2.70 ms through PyTorch where the standalone ones take 2.94 / 2.40 ms.
// Variants, each timed per kernel:
//   dense  silu_scale: dense layout, uniform scale (applied in the key kernel's epilogue)
//   dense  attn_scale: per-row scales (applied per element; P and G as small as the standalone's)
//   jagged silu_scale: jagged layout with offsets (what the PyTorch op passes)
//
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc -Iinclude \
//     -o /tmp/hstu_bwd_lib bench/experiments/hstu_bwd_lib_harness.cu && /tmp/hstu_bwd_lib
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "ops/hstu/hstu_attn/cuda/bwd_sm90.cuh"
#include "timing.cuh"

namespace {

using bf16 = __nv_bfloat16;
namespace hc = recops::ops::hstu_cuda;

constexpr int B = 32, S = 4096, H = 4, D = 128;

}  // namespace

int main() {
  const size_t count = size_t{B} * S * H * D, bytes = count * 2;
  std::vector<bf16> host(count);
  std::mt19937 rng(2);
  std::normal_distribution<float> n(0.0f, 1.0f);
  bf16* buf[7];
  for (bf16*& x : buf) CK(cudaMalloc(&x, bytes));
  for (int t = 0; t < 4; ++t) {
    for (auto& x : host) x = __float2bfloat16(n(rng));
    CK(cudaMemcpy(buf[t], host.data(), bytes, cudaMemcpyHostToDevice));
  }
  std::vector<int64_t> offs(B + 1);
  for (int b = 0; b <= B; ++b) offs[b] = int64_t{b} * S;
  int64_t* d_offs;
  CK(cudaMalloc(&d_offs, offs.size() * 8));
  CK(cudaMemcpy(d_offs, offs.data(), offs.size() * 8, cudaMemcpyHostToDevice));
  std::vector<float> scales(size_t{B} * S, 1.0f / S);
  float* d_scales;
  CK(cudaMalloc(&d_scales, scales.size() * 4));
  CK(cudaMemcpy(d_scales, scales.data(), scales.size() * 4, cudaMemcpyHostToDevice));

  CK(cudaFuncSetAttribute(hc::hstu_bwd_sm90_kv_kernel<bf16>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, hc::sm90b::kSmemBytes));
  CK(cudaFuncSetAttribute(hc::hstu_bwd_sm90_q_kernel<bf16>,
                          cudaFuncAttributeMaxDynamicSharedMemorySize, hc::sm90b::kSmemBytes));

  for (int variant = 0; variant < 3; ++variant) {
    hc::P p{};
    p.dtype = recops::DType::bf16;
    p.B = B;
    p.Hq = p.Hk = H;
    p.d = p.dv = D;
    p.Sq = p.Sk = S;
    p.total_q = p.total_k = int64_t{B} * S;
    p.q = buf[0];
    p.k = buf[1];
    p.v = buf[2];
    p.dout = buf[3];
    p.dq = buf[4];
    p.dk = buf[5];
    p.dv_out = buf[6];
    const int64_t row = H * D, batch = S * row;
    p.q_row = p.k_row = p.v_row = p.do_row = p.dq_row = p.dk_row = p.dv_row = row;
    p.q_head = p.k_head = p.v_head = p.do_head = p.dq_head = p.dk_head = p.dv_head = D;
    p.alpha = 1.0 / std::sqrt(double{D});
    p.silu_scale = 1.0 / S;
    p.window_left = -1;
    p.window_right = 0;
    p.group_size = 1;
    if (variant == 2) {
      p.jagged = true;
      p.offsets_q = p.offsets_k = d_offs;
      p.offsets_q_int64 = p.offsets_k_int64 = true;
    } else {
      p.jagged = false;
      p.q_batch = p.k_batch = p.v_batch = p.do_batch = p.dq_batch = p.dk_batch = p.dv_batch = batch;
    }
    if (variant == 1) p.attn_scale = d_scales;
    const int nt = S / 128;
    auto kv = [&] {
      hc::hstu_bwd_sm90_kv_kernel<bf16>
          <<<B * H * nt, hc::sm90b::kThreads, hc::sm90b::kSmemBytes>>>(p, nt);
    };
    auto q = [&] {
      hc::hstu_bwd_sm90_q_kernel<bf16>
          <<<B * H * nt, hc::sm90b::kThreads, hc::sm90b::kSmemBytes>>>(p, nt);
    };
    kv();
    q();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const float both = experiments::mean_ms(
        [&] {
          kv();
          q();
        },
        5);
    const float kv_ms = experiments::mean_ms(kv, 5), q_ms = experiments::mean_ms(q, 5);
    static const char* names[3] = {"dense silu_scale", "dense attn_scale", "jagged silu_scale"};
    std::printf("library kernels, %s: key kernel %.3f ms, query kernel %.3f ms, both %.3f ms\n",
                names[variant], kv_ms, q_ms, both);
  }
  return 0;
}
