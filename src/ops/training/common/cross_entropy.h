// training/common/cross_entropy.h: the loss arguments that fused_cross_entropy and chunk_loss share
// (training_ops.md §3.1, §3.2): part of both ops' C++ API.
#pragma once

#include <cstdint>

namespace recops {

// The schema's `reduction` (an int; the Python wrapper takes the names "none", "sum", "mean").
enum class CeReduction : int8_t { none = 0, sum = 1, mean = 2 };

// The scalars every cross-entropy op takes.
struct CeScalars {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // eps, in [0, 1]
  double z_loss_scale = 0.0;     // lambda >= 0
  double softcap = 0.0;          // c >= 0 (0: off)
  CeReduction reduction = CeReduction::mean;
};

}  // namespace recops
