// __family__/__op__/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "core/kit/impls.h"
#include "ops/__family__/__op__/params.h"

namespace recops::ops::__op___ns {

RECOPS_DECLARE_IMPLS(Params, run_reference, run_cpu, run_cuda);

}  // namespace recops::ops::__op___ns
