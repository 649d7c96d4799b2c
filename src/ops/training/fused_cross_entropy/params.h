// training/fused_cross_entropy/params.h: the flat problem description shared by the entry, the
// reference, cpu/ and cuda/ (architecture.md habit 1). One struct for the forward and backward.
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::fused_cross_entropy_ns {

enum class Red : uint8_t { none = 0, sum = 1, mean = 2 };

// acc_t: fp32, fp64 for fp64 logits. Every statistic, loss and partial below is acc_t.
struct Params {
  bool bwd = false;
  const void* logits = nullptr;  // [N, V] contiguous, dtype
  const void* labels = nullptr;  // [N], int64 when labels_int64 else int32
  const void* weight = nullptr;  // [N], weight_dtype; nullptr: all 1
  // Forward: lse [N] written (0 for ignored rows); loss, z_loss: [N] ("none") or [1].
  // Backward: lse [N] read; grad: the incoming gradient, [N] ("none") or [1]; out: dlogits [N, V].
  void* lse = nullptr;
  void* loss = nullptr;
  void* z_loss = nullptr;
  const void* grad = nullptr;
  void* out = nullptr;
  // Forward "sum"/"mean": [3, N] per-row w*l, w*lambda*lse^2 and w (0 for ignored rows), added in
  // a fixed order afterwards. Backward "mean": [1], Dn. Else unused.
  void* workspace = nullptr;
  DType dtype = DType::fp32;
  DType weight_dtype = DType::fp32;
  bool labels_int64 = true;
  Red reduction = Red::mean;
  int64_t N = 0;
  int64_t V = 0;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  double z_loss_scale = 0.0;
  double softcap = 0.0;
  int device_index = 0;
};

}  // namespace recops::ops::fused_cross_entropy_ns
