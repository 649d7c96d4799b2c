// training/mhc_post/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/mhc_post/params.h"

namespace recops::ops::mhc_post_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);
// cpu_avx2 (cpu/mhc_post_cpu_avx2.cpp): the CPU path built with AVX2 + FMA.
Status run_cpu_avx2(const Params& p, const Context& ctx);

}  // namespace recops::ops::mhc_post_ns
