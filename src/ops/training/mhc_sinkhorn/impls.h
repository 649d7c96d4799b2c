// training/mhc_sinkhorn/impls.h: the implementations the entry lists, best first, reference
// last. Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include <string>

#include "core/kit/impls.h"
#include "ops/training/mhc_sinkhorn/params.h"

namespace recops::ops::mhc_sinkhorn_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

// "" when cuda_sm80 takes the problem (compute capability 8.0 or newer on the tensors' device,
// and, for the backward with n > 8, the per-thread scratch fits shared memory); else why. Defined
// in cuda/launch.cu (builds with CUDA only).
std::string cuda_accepts(const Params& p);

}  // namespace recops::ops::mhc_sinkhorn_ns
