// jagged/jagged_softmax/impls.h: the implementations the entry lists, best first, reference last.
// Definitions live in reference.cpp, cpu/ and cuda/; none includes another.
#pragma once

#include "ops/jagged/jagged_softmax/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::jagged_softmax_ns {

Status run_reference(const Params& p, const Context& ctx);
Status run_cpu(const Params& p, const Context& ctx);
// cpu_avx2 (cpu/jagged_softmax_cpu_avx2.cpp): the CPU path built with AVX2 + FMA + F16C.
Status run_cpu_avx2(const Params& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status run_cuda(const Params& p, const Context& ctx);
#endif

}  // namespace recops::ops::jagged_softmax_ns
