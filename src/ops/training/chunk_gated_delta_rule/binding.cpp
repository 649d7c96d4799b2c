// training/chunk_gated_delta_rule/binding.cpp: the torch hooks the generic binding
// (src/torch/kit.h) cannot derive: the Meta kernels of chunk_gated_delta_rule and
// chunk_gated_delta_rule_bwd for symbolic sizes (training/common/gdn_binding.h).
#include "ops/training/common/gdn_binding.h"

RECOPS_TORCH_HOOKS(chunk_gated_delta_rule) {
  return recops::training_binding::gdn_fwd_hooks("chunk_gated_delta_rule");
}

RECOPS_TORCH_HOOKS(chunk_gated_delta_rule_bwd) {
  return recops::training_binding::gdn_bwd_hooks("chunk_gated_delta_rule_bwd");
}
