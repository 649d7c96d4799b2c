// training/prepare_wy_repr_bwd/impls.h: the implementations the entry lists, best first,
// reference last. Definitions live in reference.cpp, cpu/ and cuda/ (run_cuda, CUDA builds
// only); none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/prepare_wy_repr_bwd/params.h"

namespace recops::ops::prepare_wy_repr_bwd_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::prepare_wy_repr_bwd_ns
