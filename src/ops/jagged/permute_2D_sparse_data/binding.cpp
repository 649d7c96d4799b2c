// jagged/permute_2D_sparse_data/binding.cpp: the torch hook the generic binding cannot derive: the
// Meta kernel of the helper op _permute_2D_sparse_data_meta, for symbolic sizes
// (common/permute_binding.h). permute_2D_sparse_data's own fake kernel is fake.py's.
#include "ops/jagged/common/permute_binding.h"

RECOPS_TORCH_HOOKS(_permute_2D_sparse_data_meta) {
  return recops::ops::permute_meta_hooks("permute_2D_sparse_data", true);
}
