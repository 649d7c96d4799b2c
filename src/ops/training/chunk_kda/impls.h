// training/chunk_kda/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/ (both the composition of the sub-ops,
// compose.cpp).
#pragma once

#include "core/kit/impls.h"
#include "ops/training/chunk_kda/params.h"

namespace recops::ops::chunk_kda_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::chunk_kda_ns
