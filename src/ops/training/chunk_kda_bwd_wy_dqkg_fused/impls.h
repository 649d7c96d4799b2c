// training/chunk_kda_bwd_wy_dqkg_fused/impls.h: the implementations the entry lists, best first,
// reference last. Definitions live in reference.cpp, cpu/ and cuda/ (run_cuda, CUDA builds
// only); none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/params.h"

namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::chunk_kda_bwd_wy_dqkg_fused_ns
