// training/mhc_sinkhorn/params.h: the flat problem description shared by the entry, the
// reference and cpu/ (architecture.md habit 1).
#pragma once

#include <cstdint>

#include "recops/dtype.h"

namespace recops::ops::mhc_sinkhorn_ns {

struct Params {
  // logits: (tokens, n, n) contiguous; forward: out = P (tokens, n, n); backward: dP (tokens, n,
  // n), out = dlogits (tokens, n, n). One dtype for all (fp32 or fp64).
  const void* logits = nullptr;
  const void* dP = nullptr;  // nullptr in the forward
  void* out = nullptr;
  DType dtype = DType::fp32;
  int64_t tokens = 0;
  int64_t n = 0;
  int64_t iters = 20;
  double eps = 1e-6;
  bool backward = false;
  int device_index = 0;  // the tensors' CUDA device (cuda_accepts checks its capability)
};

}  // namespace recops::ops::mhc_sinkhorn_ns
