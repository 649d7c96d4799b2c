// stem_indexer/cuda/score_sm90.h: the Hopper scoring GEMM of the cuda_sm90 implementation
// (score_sm90.cu). Host declarations only.
#pragma once

#include <string>

#include "ops/stem/indexer/params.h"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::stem_sm90 {

// "" when stem_score_sm90 takes this problem, else the reason (device, build, layout).
std::string score_sm90_reason(const StemIndexerParams& p);

// Writes the §3.2 rank key of S = fl32(fl32(⟨qflat_i, kflat_j⟩ · 1/R²) + vbias_j) (fp32
// accumulation) as a uint32 into slot j of row (b, hq, i) of sparse_indices, for every key block
// j of the 128 x 128 (query block, key block) tiles that hold a visible pair; other slots are left
// as they are. The selection then reads the keys of each row's candidates and overwrites the row.
Status score_sm90(const StemIndexerParams& p, const Context& ctx);

}  // namespace recops::ops::stem_sm90
