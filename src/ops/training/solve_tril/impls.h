// training/solve_tril/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp and cpu/; none includes another. No CUDA path yet.
#pragma once

#include "core/kit/impls.h"
#include "ops/training/solve_tril/params.h"

namespace recops::ops::solve_tril_ns {

::recops::Status run_reference(const Params& p, const ::recops::Context& ctx);
::recops::Status run_cpu(const Params& p, const ::recops::Context& ctx);

}  // namespace recops::ops::solve_tril_ns
