// jagged_to_padded_dense/impls.h: the implementations the entry lists (definitions live in
// reference.cpp, cpu/ and cuda/; none includes another).
#pragma once

#include "ops/jagged/jagged_to_padded_dense/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops {

Status jagged_to_padded_dense_reference(const JaggedToPaddedDenseParams& p, const Context& ctx);
Status jagged_to_padded_dense_cpu(const JaggedToPaddedDenseParams& p, const Context& ctx);
// Candidate configurations of the tunable implementations (ops/jagged/common/row_copy_tuning.h).
std::vector<TuneConfig> jagged_to_padded_dense_cpu_candidates();
#ifdef RECOPS_WITH_CUDA
Status jagged_to_padded_dense_cuda(const JaggedToPaddedDenseParams& p, const Context& ctx);
std::vector<TuneConfig> jagged_to_padded_dense_cuda_candidates();
#endif

}  // namespace recops::ops
