// tools/recops/drivers/jagged_to_padded_dense.cpp: values [total_L, *E] + seq_offsets [B+1]
// -> out [B, max_seq_len, *E] (jagged_ops.md §2.1).
//
// Case fields: lengths | offsets, offsets_dtype, offsets_shape, E, max_seq_len (required),
// padding_value (default 0), row_pad (values row stride D + row_pad), total_L (values rows when
// they should differ from offsets[B]), out_shape (a wrong output shape), range, scale.
#include "recops/jagged.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class JaggedToPaddedDense final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"jagged_to_padded_dense"}; }
  std::string folder() const override { return "jagged/jagged_to_padded_dense"; }
  // The tags this driver reads (docs/cases.md); any other is refused.
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{};
  }
  std::set<std::string> fields(const std::string&) const override {
    return {"lengths",       "offsets", "offsets_dtype", "offsets_shape", "E",     "max_seq_len",
            "padding_value", "row_pad", "total_L",       "out_shape",     "range", "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::fp32; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::fp32);
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    p->max_seq_len = *cs.max_seq_len;
    p->padding_value = cs.padding_value.value_or(0.0);
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    const int64_t total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total_L < 0) return case_error(row, "total_L (values rows) must be >= 0");
    Input values;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values", p->dtype, {total_L}, cs.E, cs.row_pad, 1, &values));
    p->inputs = {std::move(values), std::move(off)};
    int64_t D = 1;
    for (int64_t e : cs.E) D *= e;
    const int64_t B = static_cast<int64_t>(p->offsets.size()) - 1;
    p->sizes = {{"B", B}, {"max_L", p->max_seq_len}, {"D", D}, {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    Shape shape;
    p->shape_error =
        jagged_to_padded_dense_shape(p->inputs[0].view, p->inputs[1].view, p->max_seq_len, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return jagged_to_padded_dense(in[0], in[1], p.max_seq_len, p.padding_value, out[0], ctx);
  }

  double bytes(const Problem& p) const override {
    const double es = static_cast<double>(dtype_size(p.dtype));
    const TensorView& v = p.inputs[0].view;
    const double D = static_cast<double>(v.inner_numel(1));
    const double B = static_cast<double>(p.offsets.size()) - 1;
    const double read = static_cast<double>(valid_rows(p.offsets, p.max_seq_len)) * D * es;
    const double write = B * static_cast<double>(p.max_seq_len) * D * es;
    const double offs = static_cast<double>(p.offsets.size()) *
                        static_cast<double>(dtype_size(p.inputs[1].view.dtype));
    return read + write + offs;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(JaggedToPaddedDense);

}  // namespace recops::cli
