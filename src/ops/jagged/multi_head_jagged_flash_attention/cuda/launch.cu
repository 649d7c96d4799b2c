// jagged/multi_head_jagged_flash_attention/cuda/launch.cu: cuda_sm80_mma and cuda_sm80 (also the
// paths on sm90): the dtype switches to the per-dtype launchers of inst/. What the entry's accept
// tests refuse (fp64, D > 256; for cuda_sm80_mma fp32, D not a multiple of 8 up to 128, unaligned
// rows) never gets here.
#include "ops/jagged/multi_head_jagged_flash_attention/cuda/launch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "core/tuning.h"
#include "ops/jagged/multi_head_jagged_flash_attention/impls.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

std::vector<TuneConfig> mma_fwd_candidates() {
  return core::config_grid({{"fragments", {1, 2}}});
}

Status mma_fwd_fragments(const Params& p, const Context& ctx, int64_t* fragments) {
  static const std::vector<TuneConfig> candidates = mma_fwd_candidates();
  core::TuneQuery q;
  q.op = "multi_head_jagged_flash_attention";
  q.impl = "cuda_sm80_mma";
  q.backend = DeviceType::cuda;
  q.device_index = p.device_index;
  q.dtype = p.dtype;
  // The D bucket and max_L's class: how many query rows a sequence fills decides whether 128-row
  // blocks pay (long sequences) or idle half their warps (short ones).
  q.bucket = std::string(p.D <= 64 ? "D=64" : "D=128") + ",max_L=" + core::pow2_bucket(p.max_L, 2);
  q.candidates = &candidates;
  q.fallback.set("fragments", 1);
  TuneConfig cfg;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &cfg));
  *fragments = cfg.get("fragments", 1);
  return Status::Ok();
}

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.backward ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.backward ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "multi_head_jagged_flash_attention: cuda_sm80 reached with a bad dtype");
  }
}

Status run_cuda_mma(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp16:
      return p.backward ? launch_bwd_mma<__half>(p, ctx) : launch_fwd_mma<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd_mma<__nv_bfloat16>(p, ctx)
                        : launch_fwd_mma<__nv_bfloat16>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "multi_head_jagged_flash_attention: cuda_sm80_mma reached with a bad dtype");
  }
}

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
