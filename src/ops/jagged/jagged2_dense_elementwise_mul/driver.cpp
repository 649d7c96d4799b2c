// jagged/jagged2_dense_elementwise_mul/driver.cpp: the `recops` CLI's driver of
// jagged2_dense_elementwise_mul and its _bwd: builds a case's inputs, calls the public entry,
// counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths (the sides N_b) | offsets (explicit jagged²
// offsets), offsets_dtype (x_offsets' and seq_lengths' dtype), offsets_shape, max_seq_len
// (required), total_L (x elements when they should differ from x_offsets[B]), row_pad (x's and
// grad's elements further apart, y's rows further apart), out_shape, range, scale. args:
// seq_lengths (int list: seq_lengths as written, e.g. inconsistent with the offsets).
#include <algorithm>

#include "ops/jagged/common/jagged2_driver.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/jagged2_dense_elementwise_mul.h"

namespace recops::cli {
namespace {
constexpr const char* kBwd = "jagged2_dense_elementwise_mul_bwd";

class Jagged2DenseElementwiseMulDriver final : public FixedDriver {
 public:
  Jagged2DenseElementwiseMulDriver()
      : FixedDriver({.ops = {"jagged2_dense_elementwise_mul", kBwd},
                     .folder = "jagged/jagged2_dense_elementwise_mul",
                     .fields = {"lengths", "offsets", "offsets_dtype", "offsets_shape",
                                "max_seq_len", "total_L", "row_pad", "out_shape", "range", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"seq_lengths", ArgKind::int_list}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == kBwd;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    p->max_seq_len = *cs.max_seq_len;
    Input off;
    std::vector<int64_t> sides;
    RECOPS_RETURN_IF_ERROR(make_jagged2_offsets(row, &off, &p->offsets, &sides));
    off.name = "x_offsets";
    if (const auto it = cs.args.find("seq_lengths"); it != cs.args.end()) sides = it->second.list;
    const int64_t total = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total < 0) return case_error(row, "total_L must be >= 0");
    const int64_t L = std::max<int64_t>(p->max_seq_len, 0);
    p->inputs.clear();
    for (uint64_t slot = 1; slot <= (bwd ? 2u : 1u); ++slot) {
      Input in;
      RECOPS_RETURN_IF_ERROR(
          make_jagged2_values(row, bwd && slot == 1 ? "grad" : "x", p->dtype, total, slot, &in));
      p->inputs.push_back(std::move(in));
    }
    Input y;
    RECOPS_RETURN_IF_ERROR(make_rowpadded_input(row, "y", p->dtype, {L}, {L}, cs.row_pad, 3, &y));
    p->inputs.push_back(std::move(y));
    p->inputs.push_back(int_input("seq_lengths", row.offsets_dtype, sides));
    p->inputs.push_back(std::move(off));
    p->sizes = {
        {"B", static_cast<int64_t>(sides.size())}, {"max_L", p->max_seq_len}, {"total", total}};
    Shape shape = {total};
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{bwd ? "dx" : "out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == kBwd)
      return jagged2_dense_elementwise_mul_bwd({in[0], in[1], in[2], in[3], in[4], p.max_seq_len},
                                               out[0], ctx);
    return jagged2_dense_elementwise_mul({in[0], in[1], in[2], in[3], p.max_seq_len}, out[0], ctx);
  }

  // The floor: the window of x (or grad) and y's rows under it read once (Σ min(N_b, max_L)²
  // elements each; y counted per sample, as the kernels read it), the output written once, the
  // lengths and offsets read.
  double bytes(const Problem& p) const override {
    const double es = static_cast<double>(dtype_size(p.dtype));
    const double window = static_cast<double>(jagged2_window(p.offsets, p.max_seq_len));
    const TensorView& out_like = p.inputs[0].view;
    double ints = 0;
    for (size_t i = p.inputs.size() - 2; i < p.inputs.size(); ++i)
      ints += static_cast<double>(p.inputs[i].view.numel() * p.inputs[i].view.itemsize());
    return (2 * window + static_cast<double>(out_like.sizes[0])) * es + ints;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Jagged2DenseElementwiseMulDriver);

}  // namespace recops::cli
