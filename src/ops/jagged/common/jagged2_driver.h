// ops/jagged/common/jagged2_driver.h: inputs the jagged2_* ops' CLI drivers share (included by
// their driver.cpp; built into the `recops` CLI only).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "tools/recops/inputs.h"

namespace recops::cli {

// The floor roots of the block sizes of jagged² offsets (negative sizes: 0).
inline std::vector<int64_t> jagged2_sides(const std::vector<int64_t>& offs) {
  std::vector<int64_t> sides;
  for (size_t b = 0; b + 1 < offs.size(); ++b) {
    int64_t n = 0;
    while ((n + 1) * (n + 1) <= offs[b + 1] - offs[b]) ++n;
    sides.push_back(n);
  }
  return sides;
}

// The jagged² offsets input of a case. With `lengths` (the sides N_b): the complete cumsum of
// N_b², *sides = N_b. With explicit `offsets` (refusal cases): as written, *sides = the floor roots
// of the block sizes (negative sizes: 0). *offs gets the offsets' values either way.
inline Status make_jagged2_offsets(const CaseRow& row, Input* out, std::vector<int64_t>* offs,
                                   std::vector<int64_t>* sides) {
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, out, offs));
  if (!row.spec->lengths) {
    *sides = jagged2_sides(*offs);
    return Status::Ok();
  }
  sides->clear();
  for (size_t b = 0; b + 1 < offs->size(); ++b) sides->push_back((*offs)[b + 1] - (*offs)[b]);
  std::vector<int64_t> sq = {0};
  for (int64_t n : *sides) sq.push_back(sq.back() + n * n);
  if (row.offsets_dtype == DType::int32 && sq.back() > std::numeric_limits<int32_t>::max())
    return case_error(row, "sum of N_b^2 does not fit offsets_dtype int32");
  *offs = sq;
  *out = int_input(out->name, row.offsets_dtype, sq);
  return Status::Ok();
}

// Σ_b min(N_b, bound)² over the blocks of jagged² offsets: the window's elements.
inline int64_t jagged2_window(const std::vector<int64_t>& offs, int64_t bound) {
  int64_t s = 0;
  for (int64_t n : jagged2_sides(offs)) {
    const int64_t k = n < bound ? n : bound;
    s += k * k;
  }
  return s;
}

// A 1-D data input [n] whose elements are 1 + row_pad apart (non-contiguous when row_pad > 0).
inline Status make_jagged2_values(const CaseRow& row, const std::string& name, DType dtype,
                                  int64_t n, uint64_t slot, Input* out) {
  RECOPS_RETURN_IF_ERROR(
      make_rowpadded_input(row, name, dtype, {n}, {1}, row.spec->row_pad, slot, out));
  out->view =
      TensorView(out->view.data, out->view.dtype, out->view.device, {n}, {out->view.strides[0]});
  return Status::Ok();
}

}  // namespace recops::cli
