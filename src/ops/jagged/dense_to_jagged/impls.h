// dense_to_jagged/impls.h: the implementations the entry lists.
#pragma once

#include "ops/jagged/dense_to_jagged/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops {

Status dense_to_jagged_reference(const DenseToJaggedParams& p, const Context& ctx);
Status dense_to_jagged_cpu(const DenseToJaggedParams& p, const Context& ctx);
// Candidate configurations of the tunable implementations (ops/jagged/common/row_copy_tuning.h).
std::vector<TuneConfig> dense_to_jagged_cpu_candidates();
#ifdef RECOPS_WITH_CUDA
Status dense_to_jagged_cuda(const DenseToJaggedParams& p, const Context& ctx);
std::vector<TuneConfig> dense_to_jagged_cuda_candidates();
#endif

}  // namespace recops::ops
