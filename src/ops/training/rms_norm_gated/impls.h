// training/rms_norm_gated/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/rms_norm_gated/params.h"

namespace recops::ops::rms_norm_gated_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::rms_norm_gated_ns
