// jagged/jagged_dense_flash_attention/impls.h: the implementations the entry lists, best first,
// reference last. Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/jagged/jagged_dense_flash_attention/params.h"

namespace recops::ops::jagged_dense_flash_attention_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);
// cuda_sm80_mma (cuda/mma_kernel.cuh via cuda/launch.cu): the forward on tensor cores.
Status run_cuda_mma(const Params& p, const Context& ctx);

}  // namespace recops::ops::jagged_dense_flash_attention_ns
