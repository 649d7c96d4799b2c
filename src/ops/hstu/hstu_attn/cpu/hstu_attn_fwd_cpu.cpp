// hstu_attn/cpu/hstu_attn_fwd_cpu.cpp: the tiled forward and backward (fwd_kernel.h,
// bwd_kernel.h) at the build's baseline flags (cpu_generic), and what every CPU path refuses.
#define RECOPS_HSTU_VW 4  // SSE2, the x86-64 baseline
#include "ops/hstu/hstu_attn/cpu/fwd_kernel.h"
#include "ops/hstu/hstu_attn/cpu/bwd_kernel.h"

namespace recops::ops {

std::string hstu_attn_fwd_cpu_accepts(const HstuAttnParams& p) {
  if (p.dtype == DType::fp64) return "fp64 storage (fp32 accumulation only); the reference runs it";
  return {};
}

Status hstu_attn_fwd_cpu(const HstuAttnParams& p, const Context& ctx) {
  return fwd_tiled(p, ctx);
}

Status hstu_attn_bwd_cpu(const HstuAttnParams& p, const Context& ctx) {
  return bwd_tiled(p, ctx);
}

}  // namespace recops::ops
