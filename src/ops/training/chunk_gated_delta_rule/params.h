// training/chunk_gated_delta_rule/params.h: the problem description shared by the entry, the
// reference, compose.cpp, cpu/ and cuda/: training::ComposedParams (g [B, T, HV]) and the CUDA
// device, and the workspace's layout.
#pragma once

#include <cstddef>

#include "ops/training/chunk_gated_delta_rule/chunk_gated_delta_rule.h"
#include "ops/training/common/gdn_composed_params.h"

namespace recops::ops::chunk_gated_delta_rule_ns {

struct Params : training::ComposedParams<ChunkGatedDeltaRuleArgs, ChunkGatedDeltaRuleBwdOut> {};

// The workspace's parts: byte offsets (256-aligned) of each intermediate; `total` the size.
struct Layout {
  size_t qn = 0, kn = 0, G = 0, A = 0, Ai = 0, w = 0, u = 0, h = 0, v_new = 0;
  // The backward's: dv_local, dh, dv2, dw (per value head), dG, dG2 (fp32), dq and dk of the
  // normalised q and k (l2norm only), dk2 (prepare_wy_repr_bwd's dk, k's dtype).
  size_t dv_local = 0, dh = 0, dv2 = 0, dw = 0, dG = 0, dG2 = 0, dqn = 0, dkn = 0, dk2 = 0;
  size_t total = 0;
};
Layout workspace_layout(const Params& p);

}  // namespace recops::ops::chunk_gated_delta_rule_ns
