// jagged/jagged2_to_padded_dense/driver.cpp: the `recops` CLI's driver of jagged2_to_padded_dense
// and its _bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths (the sides N_b) | offsets (explicit jagged² offsets),
// offsets_dtype, offsets_shape, max_seq_len (max_length, required), padding_value, total_L (values
// elements when they should differ from offsets[B]), row_pad (values elements further apart; the
// backward's grad rows further apart), out_shape, range, scale.
#include <algorithm>

#include "ops/jagged/common/jagged2_driver.h"
#include "ops/jagged/jagged2_to_padded_dense/jagged2_to_padded_dense.h"

namespace recops::cli {
namespace {
constexpr const char* kBwd = "jagged2_to_padded_dense_bwd";

class Jagged2ToPaddedDenseDriver final : public FixedDriver {
 public:
  Jagged2ToPaddedDenseDriver()
      : FixedDriver(
            {.ops = {"jagged2_to_padded_dense", kBwd},
             .folder = "jagged/jagged2_to_padded_dense",
             .fields = {"lengths", "offsets", "offsets_dtype", "offsets_shape", "max_seq_len",
                        "padding_value", "total_L", "row_pad", "out_shape", "range", "scale"},
             .dtype = DType::fp32}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == kBwd;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len` (max_length)");
    p->max_seq_len = *cs.max_seq_len;
    p->padding_value = cs.padding_value.value_or(0.0);
    Input off;
    std::vector<int64_t> sides;
    RECOPS_RETURN_IF_ERROR(make_jagged2_offsets(row, &off, &p->offsets, &sides));
    off.name = "offsets";  // the argument's name (`recops record` writes inputs by name)
    p->scalars["max_length"] = static_cast<double>(p->max_seq_len);
    p->scalars["padding_value"] = p->padding_value;
    const int64_t total = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total < 0) return case_error(row, "total_L must be >= 0");
    const int64_t B = static_cast<int64_t>(p->offsets.size()) - 1;
    const int64_t L = std::max<int64_t>(p->max_seq_len, 0);
    p->inputs.clear();
    if (bwd) {
      Input g;
      RECOPS_RETURN_IF_ERROR(
          make_rowpadded_input(row, "grad", p->dtype, {B, L}, {L}, cs.row_pad, 1, &g));
      p->inputs.push_back(std::move(g));
      // values: only its size and dtype matter (not read).
      p->inputs.push_back(data_input("values", p->dtype, {total}, 2, 1.0));
    } else {
      Input v;
      RECOPS_RETURN_IF_ERROR(make_jagged2_values(row, "values", p->dtype, total, 1, &v));
      p->inputs.push_back(std::move(v));
    }
    p->inputs.push_back(std::move(off));
    p->sizes = {{"B", B}, {"max_L", p->max_seq_len}, {"total", total}};
    const TensorView& values = p->inputs[bwd ? 1 : 0].view;
    Shape shape;
    p->shape_error = jagged2_to_padded_dense_shape(
        {values, p->inputs.back().view, p->max_seq_len, p->padding_value}, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (bwd) shape = {total};
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{bwd ? "grad_values" : "out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == kBwd)
      return jagged2_to_padded_dense_bwd({in[0], in[1], in[2], p.max_seq_len, p.padding_value},
                                         out[0], ctx);
    return jagged2_to_padded_dense({in[0], in[1], p.max_seq_len, p.padding_value}, out[0], ctx);
  }

  // The floor: the window (min(N_b, max_L)² elements of each block) read once, the output written
  // once, the offsets read.
  double bytes(const Problem& p) const override {
    const double es = static_cast<double>(dtype_size(p.dtype));
    const double window = static_cast<double>(jagged2_window(p.offsets, p.max_seq_len));
    const TensorView& off = p.inputs.back().view;
    return (window + static_cast<double>(numel_of(p))) * es +
           static_cast<double>(off.numel() * off.itemsize());
  }

 private:
  static int64_t numel_of(const Problem& p) {
    int64_t n = 1;
    for (int64_t s : p.outputs[0].shape) n *= s;
    return n;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Jagged2ToPaddedDenseDriver);

}  // namespace recops::cli
