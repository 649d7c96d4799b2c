// ops/jagged/common/select_entry.h: what the segment-select entries (jagged_index_select,
// keyed_jagged_index_select_dim1) share after their checks: the params of one call, the
// workspace size and the checked dispatch.
#pragma once

#include <cstddef>
#include <vector>

#include "core/dispatch.h"
#include "ops/jagged/common/select_params.h"

namespace recops::ops {

// src: [rows, *E] (last stride 1); lengths: [F*B]; indices: [K]. B >= 1 divides lengths.size(0)
// (jagged_index_select: B = lengths.size(0), F = 1).
inline SelectParams select_params(const TensorView& src, const TensorView& lengths,
                                  const TensorView& indices, int64_t B) {
  SelectParams p;
  p.src = src.data;
  p.src_row_stride = src.strides[0];
  p.dtype = src.dtype;
  p.D = src.inner_numel(1);
  p.lengths = lengths.data;
  p.lengths_int64 = lengths.dtype == DType::int64;
  p.lengths_stride = lengths.strides[0];
  p.indices = indices.data;
  p.indices_int64 = indices.dtype == DType::int64;
  p.indices_stride = indices.strides[0];
  p.B = B;
  p.F = B > 0 ? lengths.sizes[0] / B : 1;
  p.K = indices.sizes[0];
  p.device_index = src.device.index;
  return p;
}

// Scratch bytes of p on `dev` (0 on the CPU).
inline size_t select_workspace_bytes(const SelectParams& p, DeviceType dev) {
#ifdef RECOPS_WITH_CUDA
  if (dev == DeviceType::cuda) return select_cuda_workspace_bytes(p);
#endif
  (void)p, (void)dev;
  return 0;
}

// Checks the caller's workspace, then runs the first implementation of `impls` that accepts.
inline Status select_dispatch(const char* op, const std::vector<core::Impl<SelectParams>>& impls,
                              SelectParams p, DeviceType dev, const Context& ctx) {
  const size_t need = select_workspace_bytes(p, dev);
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), op,
               ": needs ", need, " bytes of workspace (", op, "_workspace_bytes), got ",
               ctx.workspace_bytes);
  p.workspace = ctx.workspace;
  p.workspace_bytes = ctx.workspace_bytes;
  return core::dispatch(op, impls, dev, p, ctx);
}

}  // namespace recops::ops
