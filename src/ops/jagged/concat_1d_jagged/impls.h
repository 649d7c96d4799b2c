// jagged/concat_1d_jagged/impls.h: the implementations the entry lists, best first, reference
// last. Definitions live in reference.cpp, cpu/ and cuda/.
#pragma once

#include "core/kit/impls.h"
#include "ops/jagged/concat_1d_jagged/params.h"

namespace recops::ops::concat_1d_jagged_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::concat_1d_jagged_ns
