// block_sparse_attention/impls.h: the implementations the entry lists (definitions live in
// reference.cpp, cpu/ and cuda/; none includes another).
#pragma once

#include <string>
#include <vector>

#include "ops/stem/block_sparse_attention/params.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tuning.h"

namespace recops::ops {

Status block_sparse_attention_reference(const BlockSparseAttentionParams& p, const Context& ctx);
// The accuracy standard's plain baseline (scores and P rounded to the dtype, dense over the mask).
Status block_sparse_attention_plain_impl(const BlockSparseAttentionParams& p);
Status block_sparse_attention_cpu(const BlockSparseAttentionParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
// Hopper kernel (cuda/fa_sm90.cuh): sm_90a, D = 128, sparse_block_size 128, packed K/V.
Status block_sparse_attention_cuda_sm90(const BlockSparseAttentionParams& p, const Context& ctx);
// "" when cuda_sm90 takes this problem on its device, else the reason.
std::string block_sparse_attention_cuda_sm90_reason(const BlockSparseAttentionParams& p);
Status block_sparse_attention_cuda_fa(const BlockSparseAttentionParams& p, const Context& ctx);
// "" when the pipelined kernel (cuda_sm80_fa) takes this problem, else the reason.
std::string block_sparse_attention_cuda_fa_reason(const BlockSparseAttentionParams& p);
// cuda_sm80_fa's tune candidates (rows_per_warp 16 or 32, D = 128).
std::vector<TuneConfig> block_sparse_attention_cuda_fa_candidates();
Status block_sparse_attention_cuda(const BlockSparseAttentionParams& p, const Context& ctx);
// "" when the CUDA kernel takes this problem (D, sparse_block_size), else the reason.
std::string block_sparse_attention_cuda_reason(const BlockSparseAttentionParams& p);
#endif

}  // namespace recops::ops
