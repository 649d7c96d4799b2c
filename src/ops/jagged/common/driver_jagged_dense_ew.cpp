// ops/jagged/common/driver_jagged_dense_ew.cpp: the jagged-dense elementwise ops' CLI driver
// (driver_jagged_dense_ew.h).
#include "ops/jagged/common/driver_jagged_dense_ew.h"

#include <algorithm>

#include "ops/jagged/common/jagged_dense_ew.h"
#include "tools/recops/inputs.h"

namespace recops::cli {

std::vector<std::string> JaggedDenseEwDriver::ops() const {
  if (bwd_.empty()) return {op_};
  return {op_, bwd_};
}

std::set<std::string> JaggedDenseEwDriver::fields(const std::string&) const {
  return {"lengths", "offsets", "offsets_dtype", "offsets_shape", "E",
          "S",       "row_pad", "total_L",       "range",         "scale"};
}

std::map<std::string, ArgKind> JaggedDenseEwDriver::args(const std::string&) const {
  return {{"y_batch", ArgKind::integer}, {"y_dtype", ArgKind::text}};
}

Status JaggedDenseEwDriver::make(const CaseRow& row, Problem* p) const {
  const CaseSpec& cs = *row.spec;
  const bool bwd = row.op == bwd_;
  p->op = row.op;
  p->dtype = row.dtype.value_or(DType::fp32);
  Input off;
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
  const int64_t n_off = static_cast<int64_t>(p->offsets.size());
  const int64_t B = std::max<int64_t>(0, n_off - 1);
  int64_t S = 0;
  if (cs.S) {
    S = *cs.S;
  } else {
    for (int64_t b = 0; b + 1 < n_off; ++b) S = std::max(S, p->offsets[b + 1] - p->offsets[b]);
  }
  const int64_t total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
  if (total_L < 0) return case_error(row, "total_L (x rows) must be >= 0");
  int64_t y_batch = B;
  DType y_dtype = p->dtype;
  if (auto it = cs.args.find("y_batch"); it != cs.args.end()) y_batch = it->second.i;
  if (auto it = cs.args.find("y_dtype"); it != cs.args.end()) {
    const auto t = dtype_from_name(it->second.s);
    if (!t) return case_error(row, "args.y_dtype: unknown dtype '" + it->second.s + "'");
    y_dtype = *t;
  }
  Input x, y, grad;
  RECOPS_RETURN_IF_ERROR(
      make_rowpadded_input(row, "x_values", p->dtype, {total_L}, cs.E, cs.row_pad, 1, &x));
  RECOPS_RETURN_IF_ERROR(
      make_rowpadded_input(row, "y", y_dtype, {y_batch, S}, cs.E, cs.row_pad, 2, &y));
  p->inputs.clear();
  if (bwd) {
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "grad", p->dtype, {total_L}, cs.E, cs.row_pad, 3, &grad));
    p->inputs.push_back(std::move(grad));
  }
  p->inputs.push_back(std::move(x));
  p->inputs.push_back(std::move(off));
  p->inputs.push_back(std::move(y));
  int64_t D = 1;
  for (int64_t e : cs.E) D *= e;
  p->sizes = {{"B", B}, {"S", S}, {"D", D}, {"total_L", total_L}};
  if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
  const size_t k = bwd ? 1 : 0;  // x_values' position
  Shape shape;
  p->shape_error = ops::jd_ew_shape(row.op.c_str(), bwd ? "grad" : "x_values", p->inputs[0].view,
                                    p->inputs[k + 1].view, p->inputs[k + 2].view, &shape);
  if (!p->shape_error.ok()) return Status::Ok();
  p->outputs = {{bwd ? "dx" : "out", shape, p->dtype}};
  if (bwd) p->outputs.push_back({"dy", p->inputs[k + 2].view.shape(), y_dtype});
  return Status::Ok();
}

double JaggedDenseEwDriver::bytes(const Problem& p) const {
  const bool bwd = p.op == bwd_;
  const double es = static_cast<double>(dtype_size(p.dtype));
  const TensorView& x = p.inputs[0].view;
  const TensorView& y = p.inputs[bwd ? 3 : 2].view;
  const double D = static_cast<double>(x.inner_numel(1));
  const double total_L = static_cast<double>(x.sizes[0]);
  const double valid = static_cast<double>(valid_rows(p.offsets, y.ndim > 1 ? y.sizes[1] : 0));
  const double offs = static_cast<double>(p.offsets.size()) *
                      static_cast<double>(dtype_size(p.inputs[bwd ? 2 : 1].view.dtype));
  double rows = 0;
  if (bwd)  // grad, x, y read at the valid rows; dx and dy written whole
    rows = 3 * valid + total_L + static_cast<double>(y.sizes[0] * y.sizes[1]);
  else if (p.op == "jagged_dense_elementwise_add")  // x read and out written whole, y where valid
    rows = 2 * total_L + valid;
  else  // mul: x and y where valid, out whole
    rows = 2 * valid + total_L;
  return rows * D * es + offs;
}

}  // namespace recops::cli
