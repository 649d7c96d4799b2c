// tools/recops/drivers/drivers.h: one factory per driver (registered in driver.cpp).
#pragma once

#include <memory>

#include "tools/recops/driver.h"

namespace recops::cli {

std::unique_ptr<Driver> make_cumsum_driver();  // complete/exclusive/inclusive_cumsum
std::unique_ptr<Driver> make_jagged_to_padded_dense_driver();
std::unique_ptr<Driver> make_dense_to_jagged_driver();
std::unique_ptr<Driver> make_hstu_attn_driver();  // hstu_attn_fwd / hstu_attn_bwd
std::unique_ptr<Driver> make_stem_prepare_driver();
std::unique_ptr<Driver> make_stem_indexer_driver();  // stem_indexer / stem_indexer_metadata
std::unique_ptr<Driver> make_block_sparse_attention_driver();

}  // namespace recops::cli
