// ops/op_infos.h: one describe function per op, gathered by list_ops.cpp for `recops list`.
#pragma once

#include "recops/registry.h"

namespace recops::ops {

OpInfo complete_cumsum_info();
OpInfo exclusive_cumsum_info();
OpInfo inclusive_cumsum_info();
OpInfo jagged_to_padded_dense_info();
OpInfo dense_to_jagged_info();
OpInfo hstu_attn_fwd_info();
OpInfo hstu_attn_bwd_info();
OpInfo stem_prepare_info();
OpInfo stem_indexer_metadata_info();
OpInfo stem_indexer_info();
OpInfo block_sparse_attention_info();

}  // namespace recops::ops
