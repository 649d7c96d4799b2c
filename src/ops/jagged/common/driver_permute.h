// ops/jagged/common/driver_permute.h: the `recops` CLI driver of permute_1D_sparse_data and
// permute_2D_sparse_data (permute_api.h), one class for both; each op folder's driver.cpp
// registers it for its op. Compiled into the CLI (driver_permute.cpp).
//
// Case fields (docs/cases.md): lengths | offsets (the T*B segments, row-major; offsets_dtype is
// the lengths' dtype), total_L (values rows when they should differ from the lengths' sum), E,
// row_pad, range, scale. args: B (2-D: segments per row, required; T when B = 0); permute (a
// list) or P (drawn from [0, T) by the case seed) or shuffle (a random permutation of [0, T));
// permute_dtype ("int32" | "int64"); weights (true: fp32 weights [N]); num_rows
// (permuted_lengths_sum when it should differ); omit_rows (leave it out: the CPU entry reads it);
// bump_length (that lengths entry + 1).
#pragma once

#include "tools/recops/driver.h"

namespace recops::cli {

class PermuteDriver : public FixedDriver {
 public:
  explicit PermuteDriver(bool two_d);
  Status make(const CaseRow& row, Problem* p) const override;
  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>& out) const override;
  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override;
  // Every input and output once (each selected row is read once).
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  bool two_d_;
};

// The driver of one op, for RECOPS_REGISTER_DRIVER.
template <bool kTwoD>
class PermuteDriverOf final : public PermuteDriver {
 public:
  PermuteDriverOf() : PermuteDriver(kTwoD) {}
};

}  // namespace recops::cli
