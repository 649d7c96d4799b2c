// hstu_attn/cpu/hstu_attn_fwd_cpu_avx2.cpp: the same tiled forward and backward (fwd_kernel.h,
// bwd_kernel.h) compiled with
// AVX2 + FMA (CMakeLists.txt gives *_avx2.cpp those flags); picked at runtime when the CPU has
// them (cpu_avx2).
#include "core/cpu_features.h"
#define RECOPS_HSTU_VW 8  // AVX2
#include "ops/hstu/hstu_attn/cpu/fwd_kernel.h"
#include "ops/hstu/hstu_attn/cpu/bwd_kernel.h"

namespace recops::ops {

Status hstu_attn_fwd_cpu_avx2(const HstuAttnParams& p, const Context& ctx) {
  return fwd_tiled(p, ctx);
}

Status hstu_attn_bwd_cpu_avx2(const HstuAttnParams& p, const Context& ctx) {
  return bwd_tiled(p, ctx);
}

}  // namespace recops::ops
