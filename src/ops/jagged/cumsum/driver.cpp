// tools/recops/drivers/cumsum.cpp: complete_cumsum, exclusive_cumsum, inclusive_cumsum
// (jagged_ops.md §2.8), one driver for the family.
//
// Case fields: shape (the input's, required: [n] or [R, n] for complete, any for the others),
// dtype (int32 | int64, the input's), out_dtype (default: the input's), range (input values
// [lo, hi], default [-1000, 1000]), row_pad (2-D input rows n + row_pad apart), out_shape.
#include "recops/jagged.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class Cumsum final : public FixedDriver {
 public:
  Cumsum()
      : FixedDriver({.ops = {"complete_cumsum", "exclusive_cumsum", "inclusive_cumsum"},
                     .folder = "jagged/cumsum",
                     .fields = {"shape", "out_dtype", "range", "row_pad", "out_shape"},
                     .dtype = DType::int64}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "the input's, e.g. [n] or [R, n]"));
    const Shape& shape = *cs.shape;
    // Rows are every dim but the last; row_pad spaces them apart.
    Shape lead(shape.begin(), shape.empty() ? shape.end() : shape.end() - 1);
    std::vector<int64_t> last;
    if (!shape.empty()) last.push_back(shape.back());
    Input t;
    RECOPS_RETURN_IF_ERROR(make_rowpadded_input(row, "t", p->dtype, lead, last, cs.row_pad, 1, &t));
    p->inputs = {std::move(t)};
    const DType out_dtype = row.out_dtype.value_or(p->dtype);
    int64_t n = shape.empty() ? 1 : shape.back(), R = 1;
    for (int64_t s : lead) R *= s;
    p->sizes = {{"R", R}, {"n", n}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    Shape out_shape = shape;
    if (row.op == "complete_cumsum") {
      p->shape_error = complete_cumsum_shape(p->inputs[0].view, &out_shape);
      if (!p->shape_error.ok()) return Status::Ok();
    }
    if (cs.out_shape) out_shape = *cs.out_shape;
    p->outputs = {{"out", out_shape, out_dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "complete_cumsum") return complete_cumsum(in[0], out[0], ctx);
    if (p.op == "exclusive_cumsum") return exclusive_cumsum(in[0], out[0], ctx);
    return inclusive_cumsum(in[0], out[0], ctx);
  }

  size_t workspace_bytes(const Problem&, const std::vector<TensorView>& in,
                         const std::vector<TensorView>& out) const override {
    return cumsum_workspace_bytes(in[0], out[0]);
  }

  double bytes(const Problem& p) const override {
    const TensorView& t = p.inputs[0].view;
    double out_bytes = static_cast<double>(dtype_size(p.outputs[0].dtype));
    for (int64_t s : p.outputs[0].shape) out_bytes *= static_cast<double>(s);
    return static_cast<double>(t.numel() * t.itemsize()) + out_bytes;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Cumsum);

}  // namespace recops::cli
