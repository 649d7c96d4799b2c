// training/common/ce_entry.h: the entry checks of the cross-entropy ops (fused_cross_entropy,
// chunk_loss): the scalars, the labels' values, grad_loss and the workspace, with messages naming
// the op, the argument and the rule.
#pragma once

#include <cmath>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/offsets.h"
#include "ops/training/common/cross_entropy.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

// label_smoothing in [0, 1], z_loss_scale >= 0, softcap >= 0, reduction 0..2.
inline Status check_ce_scalars(const char* op, const CeScalars& s) {
  RECOPS_CHECK(std::isfinite(s.label_smoothing) && s.label_smoothing >= 0 && s.label_smoothing <= 1,
               op, ": label_smoothing=", s.label_smoothing, " must be in [0, 1]");
  RECOPS_CHECK(std::isfinite(s.z_loss_scale) && s.z_loss_scale >= 0, op,
               ": z_loss_scale=", s.z_loss_scale, " must be finite and >= 0");
  RECOPS_CHECK(std::isfinite(s.softcap) && s.softcap >= 0, op, ": softcap=", s.softcap,
               " must be finite and >= 0 (0: off)");
  const auto r = static_cast<int>(s.reduction);
  RECOPS_CHECK(r >= 0 && r <= 2, op, ": reduction=", r,
               " must be 0 (\"none\"), 1 (\"sum\") or 2 (\"mean\")");
  return Status::Ok();
}

// Every label in [0, V) or ignore_index: always on the CPU; on CUDA when validation is on and the
// stream is not being captured (one device-to-host copy of the labels and a sync).
inline Status check_ce_labels(const char* op, const CeScalars& s, const TensorView& labels,
                              int64_t V, const Context& ctx) {
  const int64_t N = labels.sizes[0];
  const void* host = labels.data;
  std::vector<char> buf;
  if (!labels.device.is_cpu()) {
    if (!validate_enabled() || core::cuda::stream_capturing(ctx.stream) || N == 0)
      return Status::Ok();
    buf.resize(static_cast<size_t>(N * dtype_size(labels.dtype)));
    RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(
        buf.data(), labels.data, dtype_size(labels.dtype), N, 1, labels.device.index, ctx.stream));
    host = buf.data();
  }
  for (int64_t i = 0; i < N; ++i) {
    const int64_t y = labels.dtype == DType::int64
                          ? static_cast<const int64_t*>(host)[i]
                          : static_cast<int64_t>(static_cast<const int32_t*>(host)[i]);
    RECOPS_CHECK(y == s.ignore_index || (y >= 0 && y < V), op, ": labels[", i, "]=", y,
                 " must be in [0, V) = [0, ", V, ") or ignore_index (", s.ignore_index, ")");
  }
  return Status::Ok();
}

// grad_loss: contiguous, the loss's shape ([N] for "none", else a scalar) and the statistics'
// dtype `st`, on the device of `ref` (the op's first input, named `ref_name`).
inline Status check_ce_grad_loss(const char* op, const char* ref_name, const TensorView& ref,
                                 const TensorView& grad_loss, CeReduction reduction, int64_t N,
                                 DType st) {
  const Shape ls = reduction == CeReduction::none ? Shape{N} : Shape{};
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, ref_name, ref, "grad_loss", grad_loss));
  RECOPS_CHECK(grad_loss.shape() == ls && grad_loss.dtype == st && grad_loss.is_contiguous(), op,
               ": grad_loss must be contiguous ", dtype_name(st), shape_str(ls),
               " (loss's shape and dtype); got ", describe(grad_loss));
  return Status::Ok();
}

inline Status check_ce_workspace(const char* op, const Context& ctx, size_t need) {
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), op,
               ": the workspace must hold ", need, " bytes (the op's workspace_bytes); got ",
               ctx.workspace_bytes);
  return Status::Ok();
}

}  // namespace recops::ops::training
