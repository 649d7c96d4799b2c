// complete_cumsum/impls.h: the implementations the entries list.
#pragma once

#include <cstddef>

#include "ops/jagged/cumsum/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops {

// Both return out_of_range when an int32 output overflows (the reference and the CPU always check).
Status cumsum_reference(const CumsumParams& p, const Context& ctx);
Status cumsum_cpu(const CumsumParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
// Scratch bytes the CUDA scan needs in Context::workspace.
size_t cumsum_cuda_workspace_bytes(const CumsumParams& p);
// Writes out; when p.validate, checks for int32 overflow (one synchronisation) and returns
// out_of_range naming the first overflowing position it found.
Status cumsum_cuda(const CumsumParams& p, const Context& ctx);
#endif

}  // namespace recops::ops
