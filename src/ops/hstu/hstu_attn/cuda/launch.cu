// hstu_attn/cuda/launch.cu: what cuda_sm90, cuda_sm80_fa and cuda_sm80 accept, and the dtype switch
// to the instantiations in inst/ (one element type per translation unit; head dims are runtime,
// padded to 16). Each accept test below runs once per call, as the implementation's can_implement
// in core::dispatch; the run functions here and the run_* templates they reach trust it and
// re-check nothing (the dispatch is their only caller). Tile sizes come from cuda/tiles.h.
#include <string>

#include "core/cuda/launch.h"
#include "core/cuda/runtime.h"
#include "ops/hstu/hstu_attn/cuda/bwd_fa.cuh"
#include "ops/hstu/hstu_attn/cuda/bwd_sm90.cuh"
#include "ops/hstu/hstu_attn/cuda/fwd_sm90.cuh"
#include "ops/hstu/hstu_attn/impls.h"

namespace recops::ops {

std::string hstu_attn_cuda_accepts(const HstuAttnParams& p) {
  if (p.dtype != DType::fp32 && p.dtype != DType::fp16 && p.dtype != DType::bf16)
    return "cuda_sm80 runs fp32, fp16 and bf16 storage (fp64 runs on the CPU)";
  if (p.d > 256 || p.dv > 256)
    return detail::cat("cuda_sm80 supports d and dv up to 256 (got d=", p.d, ", dv=", p.dv,
                       "); larger heads run on the CPU");
  return core::cuda::capability_reason(p.device_index, 80);
}

namespace {
using Kernel = Status (*)(const HstuAttnParams&, const Context&);
// The device guard, then the instantiation of p.dtype (fp32: none for the bf16/fp16-only
// implementations); `what` ("op: impl") names them in the error for any other dtype.
Status run_dtype(const HstuAttnParams& p, const Context& ctx, Kernel bf16, Kernel fp16, Kernel fp32,
                 const char* what) {
  core::cuda::ScopedDevice guard(p.device_index);
  RECOPS_RETURN_IF_ERROR(guard.status());
  switch (p.dtype) {
    case DType::bf16: return bf16(p, ctx);
    case DType::fp16: return fp16(p, ctx);
    case DType::fp32:
      if (fp32) return fp32(p, ctx);
      break;
    default: break;
  }
  return Status(StatusCode::internal, std::string(what) + " got an unsupported dtype");
}
Status run_half(const HstuAttnParams& p, const Context& ctx, Kernel bf16, Kernel fp16,
                const char* what) {
  return run_dtype(p, ctx, bf16, fp16, nullptr, what);
}

// Compute capability 9.0 and an sm_90a image in this build (the forward's bf16 kernel stands for
// the build: every cuda_sm90 kernel is compiled with the same architectures).
std::string sm90_device_reason(int device) {
  const std::string why =
      core::cuda::sm90a_reason(device, hstu_cuda::hstu_fwd_sm90_binary_version(device));
  return why.empty() ? why : "cuda_sm90 " + why;
}
}  // namespace

Status hstu_attn_fwd_cuda(const HstuAttnParams& p, const Context& ctx) {
  return run_dtype(p, ctx, hstu_attn_fwd_cuda_bf16, hstu_attn_fwd_cuda_fp16,
                   hstu_attn_fwd_cuda_fp32, "hstu_attn_fwd: cuda_sm80");
}

std::string hstu_attn_fwd_sm90_accepts(const HstuAttnParams& p) {
  if (std::string why = hstu_cuda::sm90_fwd_refusal(p); !why.empty()) return why;
  return sm90_device_reason(p.device_index);
}

std::string hstu_attn_bwd_sm90_accepts(const HstuAttnParams& p) {
  if (std::string why = hstu_cuda::sm90_bwd_refusal(p); !why.empty()) return why;
  return sm90_device_reason(p.device_index);
}

// Runs after hstu_attn_bwd_sm90_accepts accepted p (core::dispatch): d = dv ∈ {64, 128}.
Status hstu_attn_bwd_cuda_sm90(const HstuAttnParams& p, const Context& ctx) {
  constexpr const char* kWhat = "hstu_attn_bwd: cuda_sm90";
  if (p.d == 64)  // d = dv (the accept test)
    return run_half(p, ctx, hstu_attn_bwd_cuda_sm90_d64_bf16, hstu_attn_bwd_cuda_sm90_d64_fp16,
                    kWhat);
  return run_half(p, ctx, hstu_attn_bwd_cuda_sm90_bf16, hstu_attn_bwd_cuda_sm90_fp16, kWhat);
}

// Runs after hstu_attn_fwd_sm90_accepts accepted p (core::dispatch): d = dv ∈ {64, 128, 256}.
Status hstu_attn_fwd_cuda_sm90(const HstuAttnParams& p, const Context& ctx) {
  constexpr const char* kWhat = "hstu_attn_fwd: cuda_sm90";
  switch (p.d) {  // d = dv (the accept test)
    case 64:
      return run_half(p, ctx, hstu_attn_fwd_cuda_sm90_d64_bf16, hstu_attn_fwd_cuda_sm90_d64_fp16,
                      kWhat);
    case 256:
      return run_half(p, ctx, hstu_attn_fwd_cuda_sm90_d256_bf16, hstu_attn_fwd_cuda_sm90_d256_fp16,
                      kWhat);
    default:
      return run_half(p, ctx, hstu_attn_fwd_cuda_sm90_bf16, hstu_attn_fwd_cuda_sm90_fp16, kWhat);
  }
}

std::string hstu_attn_fwd_fa_accepts(const HstuAttnParams& p) {
  if (std::string why = hstu_cuda::fa_fwd_refusal(p); !why.empty()) return why;
  return core::cuda::capability_reason(p.device_index, 80);
}

// Runs after hstu_attn_fwd_fa_accepts accepted p (core::dispatch).
Status hstu_attn_fwd_cuda_fa(const HstuAttnParams& p, const Context& ctx) {
  return run_half(p, ctx, hstu_attn_fwd_cuda_fa_bf16, hstu_attn_fwd_cuda_fa_fp16,
                  "hstu_attn_fwd: cuda_sm80_fa");
}

Status hstu_attn_bwd_cuda(const HstuAttnParams& p, const Context& ctx) {
  return run_dtype(p, ctx, hstu_attn_bwd_cuda_bf16, hstu_attn_bwd_cuda_fp16,
                   hstu_attn_bwd_cuda_fp32, "hstu_attn_bwd: cuda_sm80");
}

std::string hstu_attn_bwd_fa_accepts(const HstuAttnParams& p) {
  if (std::string why = hstu_cuda::fa_bwd_refusal(p); !why.empty()) return why;
  return core::cuda::capability_reason(p.device_index, 80);
}

// Runs after hstu_attn_bwd_fa_accepts accepted p (core::dispatch).
Status hstu_attn_bwd_cuda_fa(const HstuAttnParams& p, const Context& ctx) {
  return run_half(p, ctx, hstu_attn_bwd_cuda_fa_bf16, hstu_attn_bwd_cuda_fa_fp16,
                  "hstu_attn_bwd: cuda_sm80_fa");
}

}  // namespace recops::ops
