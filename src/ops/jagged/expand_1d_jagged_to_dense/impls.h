// jagged/expand_1d_jagged_to_dense/impls.h: the implementations the entry lists, best first,
// reference last. Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/jagged/expand_1d_jagged_to_dense/params.h"

namespace recops::ops::expand_1d_jagged_to_dense_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::expand_1d_jagged_to_dense_ns
