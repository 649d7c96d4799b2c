// training/chunk_gated_delta_rule/impls.h: the implementations the entry lists, best first,
// reference last. Definitions live in reference.cpp, cpu/ and cuda/ (run_cuda, CUDA builds only);
// cpu/ and cuda/ both run compose.cpp's composition; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/chunk_gated_delta_rule/params.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::chunk_gated_delta_rule_ns
