// tools/recops/drivers/jagged_common.h: inputs shared by the drivers (seq_offsets from a case's
// lengths or explicit offsets, strided data tensors, integer and generated inputs).
#pragma once

#include <string>
#include <vector>

#include "tools/recops/driver.h"

namespace recops::cli {

// Builds the seq_offsets input (dtype = row.offsets_dtype, reshaped by `offsets_shape`) and
// returns its values in *values. Errors name the case.
Status make_offsets_input(const CaseRow& row, Input* out, std::vector<int64_t>* values);

// A data input of logical shape [lead..., *E] whose rows (the dims before E) are `row_pad`
// elements further apart than dense: buffer [prod(lead), D + row_pad], view with those strides.
// Values come from tensor_seed(case seed, slot).
Status make_rowpadded_input(const CaseRow& row, const std::string& name, DType dtype,
                            const Shape& lead, const std::vector<int64_t>& E, int64_t row_pad,
                            uint64_t slot, Input* out);

// Σ_b min(L_b, bound) from offsets values (negative lengths count as 0).
int64_t valid_rows(const std::vector<int64_t>& offsets, int64_t bound);

// An integer input holding `vals` (shape: [vals.size()] unless given), dtype t.
Input int_input(const std::string& name, DType t, const std::vector<int64_t>& vals,
                Shape shape = {});
// A dense input of `shape` filled by the generator from `seed`, values scaled by `scale`.
Input data_input(const std::string& name, DType t, const Shape& shape, uint64_t seed, double scale);
// "case 'id' (op): message"
Status case_error(const CaseRow& row, const std::string& msg);

}  // namespace recops::cli
