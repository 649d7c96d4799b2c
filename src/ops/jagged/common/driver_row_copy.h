// ops/jagged/common/driver_row_copy.h: the `recops` CLI driver of the two row-copy conversions,
// one class for both directions (ops/jagged/common/row_copy.h); each op folder's driver.cpp
// registers it for its op. Compiled into the CLI (driver_row_copy.cpp).
//
// Case fields (docs/cases.md): lengths | offsets, offsets_dtype, offsets_shape, E, row_pad (the
// input's row stride D + row_pad), total_L, out_shape (a wrong output shape), range, scale; and
//   jagged_to_padded_dense (values [total_L, *E] -> out [B, max_seq_len, *E], jagged_ops.md §2.1):
//     max_seq_len (required), padding_value (default 0); total_L: values rows when they should
//     differ from offsets[B]
//   dense_to_jagged (dense [B, S, *E] -> out [total_L, *E], §2.2): S (default: the longest
//     length); total_L: out rows (absent: read from the offsets through dense_to_jagged_total_L,
//     as the binding does)
#pragma once

#include "ops/jagged/common/row_copy.h"
#include "tools/recops/driver.h"

namespace recops::cli {

class RowCopyDriver : public Driver {
 public:
  explicit RowCopyDriver(ops::RowCopyDir dir) : dir_(dir) {}
  std::vector<std::string> ops() const override { return {ops::row_copy_op(dir_)}; }
  std::string folder() const override;
  // No tags (docs/cases.md): any is refused.
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{};
  }
  std::set<std::string> fields(const std::string&) const override;
  DType default_dtype(const std::string&) const override { return DType::fp32; }
  Status make(const CaseRow& row, Problem* p) const override;
  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override;
  // The byte floor: the copied rows read, every output row written, the offsets read.
  double bytes(const Problem& p) const override;

 private:
  ops::RowCopyDir dir_;
};

// The driver of one direction, for RECOPS_REGISTER_DRIVER.
template <ops::RowCopyDir kDir>
class RowCopyDriverOf final : public RowCopyDriver {
 public:
  RowCopyDriverOf() : RowCopyDriver(kDir) {}
};

}  // namespace recops::cli
