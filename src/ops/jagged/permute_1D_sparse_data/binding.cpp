// jagged/permute_1D_sparse_data/binding.cpp: the torch hook the generic binding cannot derive: the
// Meta kernel for symbolic sizes (common/permute_binding.h).
#include "ops/jagged/common/permute_binding.h"

RECOPS_TORCH_HOOKS(permute_1D_sparse_data) {
  return recops::ops::permute_meta_hooks("permute_1D_sparse_data", false);
}
