// stem_indexer/impls.h: the implementations the entry lists (definitions live in reference.cpp,
// cpu/ and cuda/; none includes another).
#pragma once

#include <string>

#include "ops/stem_indexer/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops {

Status stem_indexer_reference(const StemIndexerParams& p, const Context& ctx);
Status stem_indexer_cpu(const StemIndexerParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status stem_indexer_cuda(const StemIndexerParams& p, const Context& ctx);
// "" when the CUDA kernel takes this problem (its score buffer bounds Kmax), else the reason.
std::string stem_indexer_cuda_reason(const StemIndexerParams& p);
#endif

}  // namespace recops::ops
