// jagged/jagged_dense_flash_attention/cuda/launch.cu: the dtype switches of cuda_sm80 and of
// cuda_sm80_mma. The launchers are instantiated in inst/; fp64, which
// scripts/gen_instances.py has no file
// name for, here.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "core/tuning.h"
#include "ops/jagged/jagged_dense_flash_attention/cuda/kernel.cuh"
#include "ops/jagged/jagged_dense_flash_attention/cuda/launch.h"
#include "ops/jagged/jagged_dense_flash_attention/impls.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

std::vector<TuneConfig> mma_fwd_candidates() {
  return core::config_grid({{"rows", {64, 32}}});
}

Status mma_fwd_rows(const Params& p, const Context& ctx, int64_t* rows) {
  static const std::vector<TuneConfig> candidates = mma_fwd_candidates();
  core::TuneQuery q;
  q.op = "jagged_dense_flash_attention";
  q.impl = "cuda_sm80_mma";
  q.backend = DeviceType::cuda;
  q.device_index = p.device_index;
  q.dtype = p.dtype;
  // The D bucket and T's class: the column tiles' count and fill set how many blocks run at once.
  q.bucket = std::string(p.D <= 64 ? "D=64" : "D=128") + ",T=" + core::pow2_bucket(p.T);
  q.candidates = &candidates;
  q.fallback.set("rows", 64);
  TuneConfig cfg;
  RECOPS_RETURN_IF_ERROR(core::resolve_config(q, ctx, &cfg));
  *rows = cfg.get("rows", 64);
  return Status::Ok();
}

template Status launch_fwd<double>(const Params& p, const Context& ctx);
template Status launch_bwd<double>(const Params& p, const Context& ctx);

Status run_cuda(const Params& p, const Context& ctx) {
  switch (p.dtype) {
    case DType::fp32: return p.backward ? launch_bwd<float>(p, ctx) : launch_fwd<float>(p, ctx);
    case DType::fp16: return p.backward ? launch_bwd<__half>(p, ctx) : launch_fwd<__half>(p, ctx);
    case DType::bf16:
      return p.backward ? launch_bwd<__nv_bfloat16>(p, ctx) : launch_fwd<__nv_bfloat16>(p, ctx);
    case DType::fp64: return p.backward ? launch_bwd<double>(p, ctx) : launch_fwd<double>(p, ctx);
    default:
      return Status(StatusCode::internal,
                    "jagged_dense_flash_attention: cuda_sm80 reached with a bad dtype");
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
                    "jagged_dense_flash_attention: cuda_sm80_mma reached with a bad dtype");
  }
}

}  // namespace recops::ops::jagged_dense_flash_attention_ns
