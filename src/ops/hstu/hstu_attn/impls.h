// hstu_attn/impls.h: the implementations the entry lists (definitions live in reference.cpp and
// cpu/; neither includes the other).
#pragma once

#include <string>

#include "ops/hstu/hstu_attn/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops {

// fp64 golden (p.plain = false) or the plain same-precision baseline (p.plain = true).
Status hstu_attn_fwd_reference(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_reference(const HstuAttnParams& p, const Context& ctx);
// The reference's mask of sequence b, query head h into a bool [Sq, Sk] buffer (row stride rs,
// column stride cs); false outside [Lq, Lk).
void hstu_attn_mask_reference(const HstuAttnParams& p, int64_t b, int64_t h, uint8_t* out,
                              int64_t rs, int64_t cs);

// Tiled, multi-threaded CPU forward (fp32 accumulation): one kernel (cpu/fwd_kernel.h) built at
// the baseline flags and with AVX2 + FMA; both refuse what hstu_attn_fwd_cpu_accepts refuses.
std::string hstu_attn_fwd_cpu_accepts(const HstuAttnParams& p);
Status hstu_attn_fwd_cpu(const HstuAttnParams& p, const Context& ctx);
std::string hstu_attn_fwd_avx2_available();
Status hstu_attn_fwd_cpu_avx2(const HstuAttnParams& p, const Context& ctx);
// The forward with AVX512-BF16 dot products (bf16 inputs; P rounded to bf16 before P·V).
std::string hstu_attn_fwd_avx512_bf16_available();
std::string hstu_attn_fwd_avx512_bf16_accepts(const HstuAttnParams& p);
Status hstu_attn_fwd_cpu_avx512_bf16(const HstuAttnParams& p, const Context& ctx);
// Tiled, deterministic CPU backward (no paged KV: the entry refuses it), same two builds.
Status hstu_attn_bwd_cpu(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cpu_avx2(const HstuAttnParams& p, const Context& ctx);
std::string hstu_attn_avx512_available();
Status hstu_attn_bwd_cpu_avx512(const HstuAttnParams& p, const Context& ctx);

#ifdef RECOPS_WITH_CUDA
// General CUDA kernels (cuda/, sm_80 and newer): fwd and deterministic bwd, every feature.
std::string hstu_attn_cuda_accepts(const HstuAttnParams& p);
Status hstu_attn_fwd_cuda(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_fp16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_fp32(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_fp16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_fp32(const HstuAttnParams& p, const Context& ctx);
// Register-resident forward (cuda/fwd_fa.cuh, cuda_sm80_fa): bf16/fp16, d and dv multiples of 8
// up to 128, 16-byte aligned rows; every mask feature, rab, GQA, delta-q, paged KV.
std::string hstu_attn_fwd_fa_accepts(const HstuAttnParams& p);
Status hstu_attn_fwd_cuda_fa(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_fa_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_fa_fp16(const HstuAttnParams& p, const Context& ctx);
// Hopper forward (cuda/fwd_sm90.cuh, cuda_sm90): sm_90a, TMA + wgmma, warp-specialised;
// bf16/fp16, d = dv ∈ {64, 128, 256}, interval masks, GQA, delta-q; no rab, paged KV, custom mask
// or func. One function per element type and head size (the unsuffixed ones: d = 128).
std::string hstu_attn_fwd_sm90_accepts(const HstuAttnParams& p);
Status hstu_attn_fwd_cuda_sm90(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_fp16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_d64_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_d64_fp16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_d256_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_fwd_cuda_sm90_d256_fp16(const HstuAttnParams& p, const Context& ctx);
// Hopper backward (cuda/bwd_sm90.cuh, cuda_sm90): sm_90a wgmma, deterministic; bf16/fp16,
// d = dv ∈ {64, 128}, interval masks, GQA, delta-q; no rab, paged KV, custom mask or func.
std::string hstu_attn_bwd_sm90_accepts(const HstuAttnParams& p);
Status hstu_attn_bwd_cuda_sm90(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_sm90_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_sm90_fp16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_sm90_d64_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_sm90_d64_fp16(const HstuAttnParams& p, const Context& ctx);
// Register-resident backward (cuda/bwd_fa.cuh, cuda_sm80_fa): the same cases without drab
// (rab allowed), deterministic; a key kernel (dK, dV) and a query kernel (dQ).
std::string hstu_attn_bwd_fa_accepts(const HstuAttnParams& p);
Status hstu_attn_bwd_cuda_fa(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_fa_bf16(const HstuAttnParams& p, const Context& ctx);
Status hstu_attn_bwd_cuda_fa_fp16(const HstuAttnParams& p, const Context& ctx);
#endif

}  // namespace recops::ops
