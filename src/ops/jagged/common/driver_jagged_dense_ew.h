// ops/jagged/common/driver_jagged_dense_ew.h: the `recops` CLI driver of the jagged-dense
// elementwise ops (jagged_dense_elementwise_add, jagged_dense_elementwise_mul and _mul_bwd); each
// op folder's driver.cpp subclasses it with its op names and the call of its entry. Compiled into
// the CLI.
//
// Case fields (docs/cases.md): lengths | offsets, offsets_dtype, offsets_shape, E, S (y's extent;
// default the longest length), row_pad (extra elements between rows of every input), total_L
// (x rows when they should differ from offsets[B]), range, scale; args: y_batch (y.size(0) when
// it should differ from B), y_dtype (y's dtype when it should differ from the case's).
// Inputs: x_values [total_L, *E], seq_offsets, y [B, S, *E]; mul_bwd first takes grad like x.
#pragma once

#include <string>
#include <vector>

#include "tools/recops/driver.h"

namespace recops::cli {

class JaggedDenseEwDriver : public Driver {
 public:
  // `op`: the forward; `bwd`: its backward op ("" = none).
  JaggedDenseEwDriver(std::string op, std::string bwd) : op_(std::move(op)), bwd_(std::move(bwd)) {}
  std::vector<std::string> ops() const override;
  std::string folder() const override { return "jagged/" + op_; }
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{};
  }
  std::set<std::string> fields(const std::string&) const override;
  std::map<std::string, ArgKind> args(const std::string&) const override;
  DType default_dtype(const std::string&) const override { return DType::fp32; }
  Status make(const CaseRow& row, Problem* p) const override;
  // run(): the op folder's subclass calls its entry (in: [grad,] x_values, seq_offsets, y).
  // The byte floor (jagged_ops.md §6.1): what the math must read, every output once, the offsets.
  double bytes(const Problem& p) const override;

 private:
  std::string op_, bwd_;
};

}  // namespace recops::cli
