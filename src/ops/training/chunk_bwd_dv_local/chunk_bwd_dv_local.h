// training/chunk_bwd_dv_local/chunk_bwd_dv_local.h: the C++ API (torch-free) of chunk_bwd_dv_local
// (training_ops.md §4.3, the GDN sub-op; fla-core's fla.ops.common.chunk_o.chunk_bwd_dv_local).
// The Args struct is the argument table's struct. Forward only, as fla's (it is itself a piece of
// the GDN backward).
//
// Each sequence is cut into chunks of BT = chunk_size positions from its own start (the last one
// may be shorter). For position j of a chunk (last position c1), value head hv (key head
// h = hv / (HV / H)):
//   dv_local[j, hv] = scale · Σ_{j ≤ i ≤ c1} exp(G_i − G_j) · (q[i, h] · k[j, h]) · do[i, hv]
// (exp2 with gate_log2; the factor is 1 without G). q, k: [B, T, H, K]; do: [B, T, HV, V];
// G: [B, T, HV]; dv_local: [B, T, HV, V] in do's dtype (fla's empty_like(do)). scale defaults to
// K^-1/2.
#pragma once

#include <cstdint>
#include <optional>

#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops {

struct ChunkBwdDvLocalArgs {
  TensorView q;                           // [B, T, H, K], fp64/fp32/fp16/bf16
  TensorView k;                           // [B, T, H, K]
  std::optional<TensorView> g;            // G: [B, T, HV], the chunk-local gate cumsum
  TensorView do_;                         // [B, T, HV, V], HV % H == 0 (schema name `do`)
  std::optional<double> scale;            // default K^-1/2 (1 for K = 0)
  std::optional<TensorView> seq_offsets;  // [N+1] int32/int64; needs B = 1
  int64_t chunk_size = 64;                // BT: 16, 32 or 64
  bool gate_log2 = false;                 // G in log2 units: exp2 instead of exp
};
// dv_local: [B, T, HV, V], do's dtype.
Status chunk_bwd_dv_local_shape(const ChunkBwdDvLocalArgs& a, Shape* out_shape, DType* out_dtype);
Status chunk_bwd_dv_local(const ChunkBwdDvLocalArgs& a, const TensorView& dv,
                          const Context& ctx = {});

// The double standard's plain same-precision baseline (accuracy.md; CPU tensors only): the
// golden's loops in fp32 (fp64 for fp64 do), the chunk's matrix stored in do's dtype, rounded
// once to dv's dtype.
Status chunk_bwd_dv_local_plain(const ChunkBwdDvLocalArgs& a, const TensorView& dv);

}  // namespace recops
