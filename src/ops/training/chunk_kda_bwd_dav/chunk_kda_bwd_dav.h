// training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h: the C++ API (torch-free) of chunk_kda_bwd_dav
// (training_ops.md §4.5, KDA; fla-core's fla.ops.kda.chunk_bwd.chunk_kda_bwd_dAv): the KDA
// backward through the intra-chunk output term o_i += Σ_{j ≤ i} Aqk_ij v_new_j. Forward only as an
// op.
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last may
// be shorter, L rows). For rows i, j of a chunk and value head hv:
//   dv_j      = Σ_{i ≥ j} Aqk_ij · do_i                      (the lower part of Aqk only)
//   dAqk_ij   = scale · (do_i · v_new_j)   for j ≤ i, else 0  (all BT columns of a row written)
// Aqk = scale · Â (chunk_kda_fwd_intra's Aqk, scale included), so dAqk is the gradient with
// respect to the unscaled Â, as fla's kernel (which multiplies its do·v_newᵀ by scale).
// v_new, do: [B, T, HV, V]; Aqk: [B, T, HV, BT]. dAqk: [B, T, HV, BT] fp32; dv: do's sizes and
// dtype. seq_offsets [N+1] (fla's cu_seqlens): packed, B must be 1.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkKdaBwdDavArgs {
  TensorView v_new;                       // [B, T, HV, V], fp64/fp32/fp16/bf16
  TensorView d_o;                         // do: [B, T, HV, V]
  TensorView Aqk;                         // [B, T, HV, BT]: the chunks' rows of scale·Â
  std::optional<double> scale;            // default 1 (pass the forward's scale, as fla does)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64, = Aqk's last dim
};

// The two outputs, in the schema's order: dAqk [B, T, HV, BT] fp32, dv do's sizes and dtype.
struct ChunkKdaBwdDavOut {
  TensorView dAqk, dv;
};

Status chunk_kda_bwd_dav_shape(const ChunkKdaBwdDavArgs& a, Shape* dAqk, Shape* dv,
                               DType* dv_dtype);
Status chunk_kda_bwd_dav(const ChunkKdaBwdDavArgs& a, const ChunkKdaBwdDavOut& out,
                         const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 do), each output rounded once. fla's kernel keeps its
// products in fp32; the only storage rounding (Aqk in k's dtype) is already in the input.
Status chunk_kda_bwd_dav_plain(const ChunkKdaBwdDavArgs& a, const ChunkKdaBwdDavOut& out);

}  // namespace recops
