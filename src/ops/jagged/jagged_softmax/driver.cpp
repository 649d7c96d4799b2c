// jagged/jagged_softmax/driver.cpp: the `recops` CLI's driver of jagged_softmax and
// jagged_softmax_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths | offsets, offsets_dtype, offsets_shape,
// max_seq_len (required), E ([H]; absent: 1-D values), row_pad (the data inputs' row stride
// H + row_pad), total_L (values rows when they should differ from offsets[B]), out_shape (a wrong
// output shape), range, scale. args: neg_inf_col (a column set to -inf in every row of the first
// data input: values, or grad for the backward).
#include <cmath>
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/jagged_softmax/jagged_softmax.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

// The backward's y becomes the softmax (the reference forward) of its random values, as in
// training: positive, summing to 1 per column, so that sum(grad * y) is a convex combination of
// grad. With invalid offsets (refusal cases) y stays random.
void make_y_a_softmax(Problem* p) {
  const TensorView& y = p->inputs[1].view;
  Tensor soft = Tensor::empty(y.shape(), y.dtype);
  Context ctx;
  ctx.impl = "reference";
  if (!jagged_softmax({y, p->inputs[2].view, p->max_seq_len}, soft.view(), ctx).ok()) return;
  const int64_t row_bytes = y.inner_numel(1) * y.itemsize();
  for (int64_t r = 0; r < y.sizes[0]; ++r)
    std::memcpy(static_cast<char*>(y.data) + r * y.strides[0] * y.itemsize(),
                static_cast<const char*>(soft.data()) + r * row_bytes,
                static_cast<size_t>(row_bytes));
}

class JaggedSoftmaxDriver final : public Driver {
 public:
  std::vector<std::string> ops() const override { return {"jagged_softmax", "jagged_softmax_bwd"}; }
  std::string folder() const override { return "jagged/jagged_softmax"; }
  std::set<std::string> fields(const std::string&) const override {
    return {"lengths", "offsets", "offsets_dtype", "offsets_shape", "max_seq_len", "E",
            "row_pad", "total_L", "out_shape",     "range",         "scale"};
  }
  std::map<std::string, ArgKind> args(const std::string&) const override {
    return {{"neg_inf_col", ArgKind::integer}};
  }
  std::optional<std::set<std::string>> tags(const std::string&) const override {
    return std::set<std::string>{};
  }
  DType default_dtype(const std::string&) const override { return DType::fp32; }

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == "jagged_softmax_bwd";
    p->op = row.op;
    p->dtype = row.dtype.value_or(DType::fp32);
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    p->max_seq_len = *cs.max_seq_len;
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    const int64_t total_L = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total_L < 0) return case_error(row, "total_L (values rows) must be >= 0");
    p->inputs.clear();
    for (uint64_t slot = 1; slot <= (bwd ? 2u : 1u); ++slot) {
      Input in;
      const char* name = bwd ? (slot == 1 ? "grad" : "y") : "values";
      RECOPS_RETURN_IF_ERROR(
          make_rowpadded_input(row, name, p->dtype, {total_L}, cs.E, cs.row_pad, slot, &in));
      p->inputs.push_back(std::move(in));
    }
    if (const auto it = cs.args.find("neg_inf_col"); it != cs.args.end()) {
      const TensorView& v = p->inputs[0].view;
      const int64_t c = it->second.i;
      if (v.ndim != 2 || c < 0 || c >= v.sizes[1])
        return case_error(row, "neg_inf_col needs E: [H] with 0 <= neg_inf_col < H");
      uint64_t bits = 0;
      RECOPS_RETURN_IF_ERROR(core::encode_scalar(row.op, "neg_inf_col", -INFINITY, v.dtype, &bits));
      auto* base = static_cast<char*>(v.data);
      for (int64_t r = 0; r < v.sizes[0]; ++r)
        std::memcpy(base + (r * v.strides[0] + c) * v.itemsize(), &bits,
                    static_cast<size_t>(v.itemsize()));
    }
    p->inputs.push_back(std::move(off));
    if (bwd) make_y_a_softmax(p);
    int64_t H = 1;
    for (int64_t e : cs.E) H *= e;
    p->sizes = {{"B", static_cast<int64_t>(p->offsets.size()) - 1},
                {"max_L", p->max_seq_len},
                {"H", H},
                {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    Shape shape;
    const TensorView& offs = p->inputs.back().view;
    if (bwd) {
      shape = p->inputs[1].view.shape();  // dx is like y; the entry makes every check
    } else {
      p->shape_error = jagged_softmax_shape({p->inputs[0].view, offs, p->max_seq_len}, &shape);
      if (!p->shape_error.ok()) return Status::Ok();
    }
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{bwd ? "dx" : "out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "jagged_softmax") return jagged_softmax({in[0], in[1], p.max_seq_len}, out[0], ctx);
    return jagged_softmax_bwd({in[0], in[1], in[2], p.max_seq_len}, out[0], ctx);
  }

  // The floor: the valid rows of each data input read once, every output row written once, the
  // offsets read.
  double bytes(const Problem& p) const override {
    const TensorView& v = p.inputs[0].view;
    const double row = static_cast<double>(v.inner_numel(1) * v.itemsize());
    const double inputs = static_cast<double>(p.inputs.size() - 1);
    const double valid = static_cast<double>(valid_rows(p.offsets, p.max_seq_len));
    const TensorView& off = p.inputs.back().view;
    return (inputs * valid + static_cast<double>(v.sizes[0])) * row +
           static_cast<double>(off.numel() * off.itemsize());
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(JaggedSoftmaxDriver);

}  // namespace recops::cli
