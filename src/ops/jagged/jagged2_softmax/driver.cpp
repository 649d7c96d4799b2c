// jagged/jagged2_softmax/driver.cpp: the `recops` CLI's driver of jagged2_softmax and its _bwd:
// builds a case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths (the sides N_b) | offsets (explicit jagged²
// offsets), offsets_dtype, offsets_shape, max_seq_len (required), total_L (x elements when they
// should differ from x_offsets[B]), row_pad (data elements further apart), out_shape, range,
// scale. args: transpose (default false), neg_inf_line (line j of every block set to -inf in the
// first data input: row j, or column j when transposed).
#include <cmath>
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/common/jagged2_driver.h"
#include "ops/jagged/jagged2_softmax/jagged2_softmax.h"

namespace recops::cli {
namespace {
constexpr const char* kBwd = "jagged2_softmax_bwd";

// The backward's y becomes the softmax (the reference forward) of its random values, as in
// training. With invalid offsets (refusal cases) y stays random.
void make_y_a_softmax(Problem* p, bool transpose) {
  const TensorView& y = p->inputs[1].view;
  Tensor soft = Tensor::empty(y.shape(), y.dtype);
  Context ctx;
  ctx.impl = "reference";
  if (!jagged2_softmax({y, p->inputs[2].view, p->max_seq_len, transpose}, soft.view(), ctx).ok())
    return;
  const int64_t es = y.itemsize();
  for (int64_t i = 0; i < y.sizes[0]; ++i)
    std::memcpy(static_cast<char*>(y.data) + i * y.strides[0] * es,
                static_cast<const char*>(soft.data()) + i * es, static_cast<size_t>(es));
}

class Jagged2SoftmaxDriver final : public FixedDriver {
 public:
  Jagged2SoftmaxDriver()
      : FixedDriver(
            {.ops = {"jagged2_softmax", kBwd},
             .folder = "jagged/jagged2_softmax",
             .fields = {"lengths", "offsets", "offsets_dtype", "offsets_shape", "max_seq_len",
                        "total_L", "row_pad", "out_shape", "range", "scale"},
             .dtype = DType::fp32,
             .args = {{"transpose", ArgKind::boolean}, {"neg_inf_line", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == kBwd;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    p->max_seq_len = *cs.max_seq_len;
    const auto t = cs.args.find("transpose");
    const bool transpose = t != cs.args.end() && t->second.b;
    p->scalars["transpose"] = transpose ? 1 : 0;
    Input off;
    std::vector<int64_t> sides;
    RECOPS_RETURN_IF_ERROR(make_jagged2_offsets(row, &off, &p->offsets, &sides));
    off.name = "x_offsets";
    const int64_t total = cs.total_L ? *cs.total_L : (p->offsets.empty() ? 0 : p->offsets.back());
    if (total < 0) return case_error(row, "total_L must be >= 0");
    p->inputs.clear();
    for (uint64_t slot = 1; slot <= (bwd ? 2u : 1u); ++slot) {
      Input in;
      const char* name = bwd ? (slot == 1 ? "grad" : "y") : "x";
      RECOPS_RETURN_IF_ERROR(make_jagged2_values(row, name, p->dtype, total, slot, &in));
      p->inputs.push_back(std::move(in));
    }
    if (const auto it = cs.args.find("neg_inf_line"); it != cs.args.end()) {
      const TensorView& v = p->inputs[0].view;
      uint64_t bits = 0;
      RECOPS_RETURN_IF_ERROR(
          core::encode_scalar(row.op, "neg_inf_line", -INFINITY, v.dtype, &bits));
      const int64_t j = it->second.i;
      for (size_t b = 0; b < sides.size(); ++b) {
        const int64_t N = sides[b];
        for (int64_t k = 0; j < N && k < N; ++k) {
          const int64_t e = p->offsets[b] + (transpose ? k * N + j : j * N + k);
          std::memcpy(static_cast<char*>(v.data) + e * v.strides[0] * v.itemsize(), &bits,
                      static_cast<size_t>(v.itemsize()));
        }
      }
    }
    p->inputs.push_back(std::move(off));
    if (bwd) make_y_a_softmax(p, transpose);
    p->sizes = {{"B", static_cast<int64_t>(sides.size())},
                {"max_L", p->max_seq_len},
                {"total", total},
                {"transpose", transpose ? 1 : 0}};
    Shape shape = {total};
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{bwd ? "dx" : "out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const bool transpose = p.scalars.at("transpose") != 0;
    if (p.op == kBwd)
      return jagged2_softmax_bwd({in[0], in[1], in[2], p.max_seq_len, transpose}, out[0], ctx);
    return jagged2_softmax({in[0], in[1], p.max_seq_len, transpose}, out[0], ctx);
  }

  // The floor: the window of each data input read once, the output written once, the offsets
  // read.
  double bytes(const Problem& p) const override {
    const double es = static_cast<double>(dtype_size(p.dtype));
    const double window = static_cast<double>(jagged2_window(p.offsets, p.max_seq_len));
    const double inputs = static_cast<double>(p.inputs.size() - 1);
    const TensorView& off = p.inputs.back().view;
    return (inputs * window + static_cast<double>(p.inputs[0].view.sizes[0])) * es +
           static_cast<double>(off.numel() * off.itemsize());
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Jagged2SoftmaxDriver);

}  // namespace recops::cli
