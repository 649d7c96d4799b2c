// ops/jagged/common/jagged_case.h: what the CLI drivers of the jagged matmuls (bmm_driver.h) and of
// the jagged flash attentions share (CLI code only): the case fields, the `args:` look-ups,
// max_seq_len, the offsets input with total_L, and a dense [B, X, Y] operand that a case may give
// as a transposed view.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>

#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli::jagged_case {

// args.<k> (an integer), or `def` when the case does not give it.
inline int64_t int_arg(const CaseSpec& cs, const char* k, int64_t def) {
  const auto it = cs.args.find(k);
  return it == cs.args.end() ? def : it->second.i;
}

// args.<k> (a boolean), false when the case does not give it.
inline bool bool_arg(const CaseSpec& cs, const char* k) {
  const auto it = cs.args.find(k);
  return it != cs.args.end() && it->second.b;
}

// The case fields these drivers read beyond the common ones, and the driver's own (`extra`).
inline std::set<std::string> fields(std::set<std::string> extra = {}) {
  extra.insert({"lengths", "offsets", "offsets_dtype", "offsets_shape", "max_seq_len", "total_L",
                "row_pad", "out_shape", "scale"});
  return extra;
}

// p->max_seq_len from the case, which must give it.
inline Status take_max_seq_len(const CaseRow& row, Problem* p) {
  if (!row.spec->max_seq_len) return case_error(row, "needs `max_seq_len`");
  p->max_seq_len = *row.spec->max_seq_len;
  return Status::Ok();
}

// The seq_offsets input (values in p->offsets) and total_L: the case's `total_L`, else
// offsets[B] (0 without offsets); a negative one is a case error.
inline Status offsets_and_total(const CaseRow& row, Problem* p, Input* off, int64_t* total_L) {
  const CaseSpec& cs = *row.spec;
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, off, &p->offsets));
  *total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
  if (*total_L < 0) return case_error(row, "total_L must be >= 0");
  return Status::Ok();
}

// A dense input of logical shape [B, X, Y] from tensor_seed(case seed, slot) scaled by the case's
// scale; with `transposed`, a view of a [B, Y, X] buffer with its last two dims swapped.
inline Input dense_input(const CaseSpec& cs, const char* name, DType dtype, int64_t B, int64_t X,
                         int64_t Y, bool transposed, uint64_t slot) {
  Input in = data_input(name, dtype, transposed ? Shape{B, Y, X} : Shape{B, X, Y},
                        tensor_seed(cs.seed, slot), cs.scale);
  if (transposed) {
    std::swap(in.view.sizes[1], in.view.sizes[2]);
    std::swap(in.view.strides[1], in.view.strides[2]);
  }
  return in;
}

}  // namespace recops::cli::jagged_case
