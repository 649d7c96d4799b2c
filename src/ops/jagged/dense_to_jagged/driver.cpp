// tools/recops/drivers/dense_to_jagged.cpp: dense [B, S, *E] + seq_offsets [B+1]
// -> out [total_L, *E] (jagged_ops.md §2.2).
//
// Case fields: lengths | offsets, offsets_dtype, offsets_shape, E, S (default: the longest
// length), total_L (out rows; absent: read from the offsets through dense_to_jagged_total_L, as
// the binding does), row_pad (dense row stride D + row_pad), out_shape, range, scale.
#include <algorithm>

#include "recops/jagged.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class DenseToJagged final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"dense_to_jagged"}; }
  std::string folder() const override { return "jagged/dense_to_jagged"; }
  // The tags this driver reads (docs/cases.md); any other is refused.
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{};
  }
  std::set<std::string> fields(const std::string&) const override {
    return {"lengths", "offsets", "offsets_dtype", "offsets_shape", "E",    "S",
            "total_L", "row_pad", "out_shape",     "range",         "scale"};
  }
  DType default_dtype(const std::string&) const override { return DType::fp32; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::fp32);
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    const int64_t B = std::max<int64_t>(0, static_cast<int64_t>(p->offsets.size()) - 1);
    int64_t S = 0;
    if (cs.S) {
      S = *cs.S;
    } else {
      for (size_t b = 0; b + 1 < p->offsets.size(); ++b)
        S = std::max(S, p->offsets[b + 1] - p->offsets[b]);
    }
    Input dense;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "dense", p->dtype, {B, S}, cs.E, cs.row_pad, 1, &dense));
    p->inputs = {std::move(dense), std::move(off)};
    // total_L: as given, or what dense_to_jagged_total_L reads (the binding's path).
    int64_t total_L = 0;
    if (cs.total_L) {
      total_L = *cs.total_L;
    } else {
      p->shape_error = dense_to_jagged_total_L(p->inputs[1].view, &total_L);
      if (!p->shape_error.ok()) return Status::Ok();
    }
    int64_t D = 1;
    for (int64_t e : cs.E) D *= e;
    p->sizes = {{"B", B}, {"S", S}, {"D", D}, {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    Shape shape;
    p->shape_error = dense_to_jagged_shape(p->inputs[0].view, p->inputs[1].view, total_L, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return dense_to_jagged(in[0], in[1], out[0], ctx);
  }

  double bytes(const Problem& p) const override {
    const double es = static_cast<double>(dtype_size(p.dtype));
    const TensorView& d = p.inputs[0].view;
    const double D = static_cast<double>(d.inner_numel(2));
    const double total_L = p.outputs.empty() ? 0 : static_cast<double>(p.outputs[0].shape[0]);
    const double read = static_cast<double>(valid_rows(p.offsets, d.sizes[1])) * D * es;
    const double offs = static_cast<double>(p.offsets.size()) *
                        static_cast<double>(dtype_size(p.inputs[1].view.dtype));
    return read + total_L * D * es + offs;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(DenseToJagged);

}  // namespace recops::cli
