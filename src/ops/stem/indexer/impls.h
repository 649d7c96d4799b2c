// stem_indexer/impls.h: the implementations the entry lists (definitions live in reference.cpp,
// cpu/ and cuda/; none includes another).
#pragma once

#include <string>
#include <vector>

#include "ops/stem/indexer/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops {

Status stem_indexer_reference(const StemIndexerParams& p, const Context& ctx);
Status stem_indexer_cpu(const StemIndexerParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status stem_indexer_cuda(const StemIndexerParams& p, const Context& ctx);
// "" when the CUDA kernel takes this problem (every problem: large Kmax keeps its scores in the
// output rows), else the reason.
std::string stem_indexer_cuda_reason(const StemIndexerParams& p);
// The tune candidates of cuda_sm80 (score_buffer: 0 shared memory when it fits, 1 output rows).
std::vector<TuneConfig> stem_indexer_cuda_candidates();
// cuda_sm90: the Hopper scoring GEMM (causal tiles only) and the same selection.
Status stem_indexer_cuda_sm90(const StemIndexerParams& p, const Context& ctx);
std::string stem_indexer_cuda_sm90_reason(const StemIndexerParams& p);
#endif

}  // namespace recops::ops
