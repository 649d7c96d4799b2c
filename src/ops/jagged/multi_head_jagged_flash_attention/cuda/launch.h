// jagged/multi_head_jagged_flash_attention/cuda/launch.h: the per-dtype launchers (forward: out
// and lse; backward: dq, then dk and dv), defined in kernel.cuh and instantiated once per dtype and
// direction in inst/ (instances.json).
#pragma once

#include <cstdint>
#include <vector>

#include "ops/jagged/multi_head_jagged_flash_attention/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

template <class T>
Status launch_fwd(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd(const Params& p, const Context& ctx);

// cuda_sm80_mma (cuda/mma_kernel.cuh), T = __half or __nv_bfloat16.
template <class T>
Status launch_fwd_mma(const Params& p, const Context& ctx);
template <class T>
Status launch_bwd_mma(const Params& p, const Context& ctx);

// cuda_sm80_mma's forward is tunable: `fragments` = 16-row fragments a warp (1: 64 query rows a
// block; 2: 128, each K / V fragment serving both). The candidates (the first is the default) and
// the configuration a problem runs with (Context::tune_config, the tuning files, the default;
// bucket D and max_L), both in multi_head_jagged_flash_attention.cpp.
std::vector<TuneConfig> mma_fwd_candidates();
Status mma_fwd_fragments(const Params& p, const Context& ctx, int64_t* fragments);

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
