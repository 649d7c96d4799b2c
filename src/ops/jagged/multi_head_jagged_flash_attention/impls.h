// jagged/multi_head_jagged_flash_attention/impls.h: the implementations the entry lists, best
// first, reference last. Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/jagged/multi_head_jagged_flash_attention/params.h"

namespace recops::ops::multi_head_jagged_flash_attention_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);
// cpu_avx2 (cpu/multi_head_jagged_flash_attention_cpu_avx2.cpp): the CPU path built with AVX2 +
// FMA + F16C.
Status run_cpu_avx2(const Params& p, const Context& ctx);
// cuda_sm80_mma (cuda/mma_kernel.cuh via cuda/launch.cu): fp16 / bf16 on tensor cores.
Status run_cuda_mma(const Params& p, const Context& ctx);

}  // namespace recops::ops::multi_head_jagged_flash_attention_ns
