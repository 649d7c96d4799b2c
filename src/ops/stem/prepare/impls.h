// stem_prepare/impls.h: the implementations the entry lists (definitions live in reference.cpp,
// cpu/ and cuda/; none includes another).
#pragma once

#include "ops/stem/prepare/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops {

Status stem_prepare_reference(const StemPrepareParams& p, const Context& ctx);
Status stem_prepare_cpu(const StemPrepareParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status stem_prepare_cuda(const StemPrepareParams& p, const Context& ctx);
#endif

}  // namespace recops::ops
