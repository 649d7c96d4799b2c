// hstu_attn/cpu/hstu_attn_fwd_cpu_avx512.cpp: the tiled forward (fwd_kernel.h) with 16-lane
// vectors and the AVX512-BF16 dot-product microkernels (RECOPS_HSTU_BF16DP) for bf16 inputs
// (cpu_avx512_bf16), and the backward at 16 lanes (cpu_avx512). CMakeLists.txt builds *_avx512.cpp
// with AVX-512 F/BW/VL/BF16.
#include <immintrin.h>

#include "core/cpu_features.h"
#define RECOPS_HSTU_VW 16
#define RECOPS_HSTU_BF16DP 1
#include "ops/hstu/hstu_attn/cpu/fwd_kernel.h"
#include "ops/hstu/hstu_attn/cpu/bwd_kernel.h"

namespace recops::ops {

Status hstu_attn_fwd_cpu_avx512_bf16(const HstuAttnParams& p, const Context& ctx) {
  return fwd_tiled(p, ctx);
}

// The backward with 16-lane fp32 vectors (no bf16 dot products yet).
Status hstu_attn_bwd_cpu_avx512(const HstuAttnParams& p, const Context& ctx) {
  return bwd_tiled(p, ctx);
}

}  // namespace recops::ops
