// ops/jagged/common/driver_row_copy.cpp: the row-copy conversions' CLI driver (driver_row_copy.h).
#include "ops/jagged/common/driver_row_copy.h"

#include <algorithm>

#include "recops/jagged.h"
#include "tools/recops/inputs.h"

namespace recops::cli {

std::string RowCopyDriver::folder() const {
  return std::string("jagged/") + ops::row_copy_op(dir_);
}

std::set<std::string> RowCopyDriver::fields(const std::string&) const {
  std::set<std::string> f = {"lengths", "offsets", "offsets_dtype", "offsets_shape", "E",
                             "row_pad", "total_L", "out_shape",     "range",         "scale"};
  if (dir_ == ops::RowCopyDir::to_dense)
    f.insert({"max_seq_len", "padding_value"});
  else
    f.insert("S");
  return f;
}

Status RowCopyDriver::make(const CaseRow& row, Problem* p) const {
  const CaseSpec& cs = *row.spec;
  const bool to_dense = dir_ == ops::RowCopyDir::to_dense;
  p->op = row.op;
  p->dtype = row.dtype.value_or(DType::fp32);
  if (to_dense) {
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    p->max_seq_len = *cs.max_seq_len;
    p->padding_value = cs.padding_value.value_or(0.0);
  }
  Input off;
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
  const int64_t n_off = static_cast<int64_t>(p->offsets.size());
  int64_t D = 1;
  for (int64_t e : cs.E) D *= e;
  Input src;
  Shape shape;
  if (to_dense) {
    const int64_t total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total_L < 0) return case_error(row, "total_L (values rows) must be >= 0");
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values", p->dtype, {total_L}, cs.E, cs.row_pad, 1, &src));
    p->inputs = {std::move(src), std::move(off)};
    p->sizes = {{"B", n_off - 1}, {"max_L", p->max_seq_len}, {"D", D}, {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    p->shape_error =
        jagged_to_padded_dense_shape(p->inputs[0].view, p->inputs[1].view, p->max_seq_len, &shape);
  } else {
    const int64_t B = std::max<int64_t>(0, n_off - 1);
    int64_t S = 0;
    if (cs.S) {
      S = *cs.S;
    } else {
      for (int64_t b = 0; b + 1 < n_off; ++b) S = std::max(S, p->offsets[b + 1] - p->offsets[b]);
    }
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "dense", p->dtype, {B, S}, cs.E, cs.row_pad, 1, &src));
    p->inputs = {std::move(src), std::move(off)};
    // total_L: as given, or what dense_to_jagged_total_L reads (the binding's path).
    int64_t total_L = 0;
    if (cs.total_L) {
      total_L = *cs.total_L;
    } else {
      p->shape_error = dense_to_jagged_total_L(p->inputs[1].view, &total_L);
      if (!p->shape_error.ok()) return Status::Ok();
    }
    p->sizes = {{"B", B}, {"S", S}, {"D", D}, {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    p->shape_error = dense_to_jagged_shape(p->inputs[0].view, p->inputs[1].view, total_L, &shape);
  }
  if (!p->shape_error.ok()) return Status::Ok();
  if (cs.out_shape) shape = *cs.out_shape;
  p->outputs = {{"out", shape, p->dtype}};
  return Status::Ok();
}

Status RowCopyDriver::run(const Problem& p, const std::vector<TensorView>& in,
                          const std::vector<TensorView>& out, const Context& ctx) const {
  if (dir_ == ops::RowCopyDir::to_dense)
    return jagged_to_padded_dense(in[0], in[1], p.max_seq_len, p.padding_value, out[0], ctx);
  return dense_to_jagged(in[0], in[1], out[0], ctx);
}

double RowCopyDriver::bytes(const Problem& p) const {
  const double es = static_cast<double>(dtype_size(p.dtype));
  const TensorView& src = p.inputs[0].view;
  double D = 0, rows_out = 0;
  int64_t S = 0;  // the dense side's rows per batch
  if (dir_ == ops::RowCopyDir::to_dense) {
    D = static_cast<double>(src.inner_numel(1));
    S = p.max_seq_len;
    rows_out = (static_cast<double>(p.offsets.size()) - 1) * static_cast<double>(S);
  } else {
    D = static_cast<double>(src.inner_numel(2));
    S = src.sizes[1];
    rows_out = p.outputs.empty() ? 0 : static_cast<double>(p.outputs[0].shape[0]);
  }
  const double read = static_cast<double>(valid_rows(p.offsets, S)) * D * es;
  const double offs = static_cast<double>(p.offsets.size()) *
                      static_cast<double>(dtype_size(p.inputs[1].view.dtype));
  return read + rows_out * D * es + offs;
}

}  // namespace recops::cli
