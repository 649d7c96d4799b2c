// jagged/jagged_dense_flash_attention/cuda/launch.h: the per-dtype launchers, defined in
// kernel.cuh and instantiated once each in inst/ (scripts/gen_instances.py).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/jagged/jagged_dense_flash_attention/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

// T: float, __half, __nv_bfloat16 or double.
template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);
// cuda_sm80_mma (cuda/mma_kernel.cuh), T = __half or __nv_bfloat16.
template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx);

// cuda_sm80_mma's forward is tunable for D <= 128: `rows` = q / v rows a pipeline stage (64: two
// blocks an SM in the 128 bucket; 32: three, at most 168 registers a thread). The candidates (the
// first is the default) and the configuration a problem runs with (Context::tune_config, the
// tuning files, the default; bucket D and T), in launch.cu.
std::vector<TuneConfig> mma_fwd_candidates();
Status mma_fwd_rows(const Params& p, const Context& ctx, int64_t* rows);

}  // namespace recops::ops::jagged_dense_flash_attention_ns
