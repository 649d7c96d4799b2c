#include "ops/op_infos.h"

namespace recops {

std::vector<OpInfo> list_ops() {
  return {ops::complete_cumsum_info(),       ops::exclusive_cumsum_info(),
          ops::inclusive_cumsum_info(),      ops::jagged_to_padded_dense_info(),
          ops::dense_to_jagged_info(),       ops::hstu_attn_fwd_info(),
          ops::hstu_attn_bwd_info(),         ops::stem_prepare_info(),
          ops::stem_indexer_metadata_info(), ops::stem_indexer_info(),
          ops::block_sparse_attention_info()};
}

}  // namespace recops
