// training/rms_norm_gated/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/rms_norm_gated/params.h"

namespace recops::ops::rms_norm_gated_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);
// cpu_avx2 (cpu/rms_norm_gated_cpu_avx2.cpp): the CPU path built with AVX2 + FMA.
Status run_cpu_avx2(const Params& p, const Context& ctx);

}  // namespace recops::ops::rms_norm_gated_ns
