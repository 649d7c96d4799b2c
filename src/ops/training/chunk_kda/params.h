// training/chunk_kda/params.h: the problem description shared by the entry, the reference and
// cpu/: training::ComposedParams (g [B, T, HV, K], per channel), and the workspace's layout.
#pragma once

#include <cstddef>

#include "ops/training/chunk_kda/chunk_kda.h"
#include "ops/training/common/gdn_composed_params.h"

namespace recops::ops::chunk_kda_ns {

struct Params : training::ComposedParams<ChunkKdaArgs, ChunkKdaBwdOut> {};

// The workspace's parts: byte offsets (256-aligned) of each intermediate; `total` the size.
struct Layout {
  // The forward's: the normalised q, k (l2norm only), G fp32, chunk_kda_fwd_intra's w, u, qg, kg,
  // Aqk, Akk, and fwd_h's h and v_new.
  size_t qn = 0, kn = 0, G = 0, w = 0, u = 0, qg = 0, kg = 0, Aqk = 0, Akk = 0, h = 0, v_new = 0;
  // The backward's: chunk_kda_bwd_dav's dAqk and dv, bwd_dhu's dh and dv2, the fused wy op's dq1,
  // dk1, dbeta1, dG1 and dAkk, chunk_kda_bwd_intra's dq2, dk2, dbeta2, dG2 (all fp32 but the dv
  // and dh), and the dq, dk of the normalised q and k in their dtypes (l2norm only).
  size_t dAqk = 0, dv_local = 0, dh = 0, dv2 = 0, dq1 = 0, dk1 = 0, dbeta1 = 0, dG1 = 0, dAkk = 0,
         dq2 = 0, dk2 = 0, dbeta2 = 0, dG2 = 0, dqn = 0, dkn = 0;
  size_t total = 0;
};
Layout workspace_layout(const Params& p);

}  // namespace recops::ops::chunk_kda_ns
