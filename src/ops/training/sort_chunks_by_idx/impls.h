// training/sort_chunks_by_idx/impls.h: the implementations the entry lists, best first, reference
// last. Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/sort_chunks_by_idx/params.h"

namespace recops::ops::sort_chunks_by_idx_ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::sort_chunks_by_idx_ns
