// jagged/expand_1d_jagged_to_dense/driver.cpp: the `recops` CLI's driver of
// expand_1d_jagged_to_dense: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths | offsets, offsets_dtype, offsets_shape, total_L
// (values rows when they should differ from offsets[B]), row_pad (values elements further apart),
// out_shape, range, scale. args: max_len (required).
#include "ops/jagged/expand_1d_jagged_to_dense/expand_1d_jagged_to_dense.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class Expand1dJaggedToDenseDriver final : public FixedDriver {
 public:
  Expand1dJaggedToDenseDriver()
      : FixedDriver({.ops = {"expand_1d_jagged_to_dense"},
                     .folder = "jagged/expand_1d_jagged_to_dense",
                     .fields = {"lengths", "offsets", "offsets_dtype", "offsets_shape", "total_L",
                                "row_pad", "out_shape", "range", "scale"},
                     .dtype = DType::int64,
                     .args = {{"max_len", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    const auto it = cs.args.find("max_len");
    if (it == cs.args.end()) return case_error(row, "needs args `max_len`");
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    const int64_t total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total_L < 0) return case_error(row, "total_L must be >= 0");
    // values [total_L] with element stride 1 + row_pad: a row-padded [total_L, 1] buffer.
    Input v;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values", p->dtype, {total_L}, {1}, cs.row_pad, 1, &v));
    v.view = TensorView(v.view.data, v.view.dtype, v.view.device, {total_L}, {v.view.strides[0]});
    p->inputs.clear();
    p->inputs.push_back(std::move(v));
    p->inputs.push_back(std::move(off));
    p->scalars["max_len"] = static_cast<double>(it->second.i);
    p->sizes = {{"B", static_cast<int64_t>(p->offsets.size()) - 1},
                {"max_len", it->second.i},
                {"total_L", total_L}};
    Shape shape;
    p->shape_error = expand_1d_jagged_to_dense_shape(
        {p->inputs[0].view, p->inputs[1].view, it->second.i}, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return expand_1d_jagged_to_dense({in[0], in[1], static_cast<int64_t>(p.scalars.at("max_len"))},
                                     out[0], ctx);
  }

  // The floor: the valid values read once (min(L_b, max_len) of each sequence, plus its last),
  // the output written once, the offsets read.
  double bytes(const Problem& p) const override {
    const TensorView& v = p.inputs[0].view;
    const auto max_len = static_cast<int64_t>(p.scalars.at("max_len"));
    const double es = static_cast<double>(v.itemsize());
    const double reads = static_cast<double>(valid_rows(p.offsets, max_len));
    const TensorView& off = p.inputs[1].view;
    const double B = static_cast<double>(off.numel() - 1);
    return (reads + B * static_cast<double>(max_len)) * es +
           static_cast<double>(off.numel() * off.itemsize());
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Expand1dJaggedToDenseDriver);

}  // namespace recops::cli
