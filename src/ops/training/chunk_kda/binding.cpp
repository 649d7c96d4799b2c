// training/chunk_kda/binding.cpp: the torch hooks the generic binding (src/torch/kit.h) cannot
// derive: the Meta kernels of chunk_kda and chunk_kda_bwd for symbolic sizes
// (training/common/gdn_binding.h).
#include "ops/training/common/gdn_binding.h"

RECOPS_TORCH_HOOKS(chunk_kda) {
  return recops::training_binding::gdn_fwd_hooks("chunk_kda");
}

RECOPS_TORCH_HOOKS(chunk_kda_bwd) {
  return recops::training_binding::gdn_bwd_hooks("chunk_kda_bwd");
}
