// training/inplace_rope/driver.cpp: the `recops` CLI's driver of inplace_rope_ and
// inplace_rope_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h). The forward's output is its input x, written in place
// (Output::mutates): `check` hands the op x's own layout and judges x after the call.
//
// Case fields beyond the common ones: shape (x's, [B, L, H, Dh] or [T, H, Dh], required; dy's for
// the backward), scale (of x), row_pad (x's heads Dh + row_pad elements apart). args:
//   half        R/2, the pairs of the rope slice (default Dh/2)
//   cos_batched cos and sin [B, L, R/2] rather than [L, R/2] (4-D x only)
//   cos_shape   cos's (and sin's) shape as given, e.g. a wrong one (refusal cases)
//   sin_shape   sin's shape, when it should differ from cos's
//   cos_dtype   fp32 (default), x (x's dtype), or any dtype name (refusal cases)
//   inverse     the conjugate rotation
//   layout      dense (default); transposed: x stored [B, H, L, Dh] ([H, T, Dh] packed) and
//               viewed [B, L, H, Dh]; last_strided: x's last dim has stride 2; overlap: x's head
//               dim has stride 0 (refusal cases)
// cos and sin hold the cosine and sine of angles drawn uniformly in (-pi, pi).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ops/training/inplace_rope/inplace_rope.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

const ArgValue* arg(const CaseSpec& cs, const char* key) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? nullptr : &it->second;
}

// x (or dy) with the case's layout; values from the case's seed in logical order.
Status make_x(const CaseRow& row, const std::string& name, DType t, const Shape& shape,
              uint64_t slot, Input* out) {
  const CaseSpec& cs = *row.spec;
  const ArgValue* lay = arg(cs, "layout");
  const std::string layout = lay ? lay->s : "dense";
  const auto nd = shape.size();
  if (cs.row_pad > 0) {
    if (layout != "dense") return case_error(row, "row_pad needs layout dense");
    const Shape lead(shape.begin(), shape.end() - 1);
    return make_rowpadded_input(row, name, t, lead, {shape.back()}, cs.row_pad, slot, out);
  }
  out->name = name;
  const FillSpec fill{tensor_seed(cs.seed, slot), cs.range, name == "x" ? cs.scale : 1.0};
  if (layout == "dense") {
    out->buf = Tensor::empty(shape, t);
    out->view = out->buf.view();
  } else if (layout == "transposed" && (nd == 3 || nd == 4)) {
    // Stored with the head dim before the position dim.
    Shape stored = shape;
    std::swap(stored[nd - 3], stored[nd - 2]);
    out->buf = Tensor::empty(stored, t);
    const TensorView s = out->buf.view();
    Shape stride(s.strides, s.strides + nd);
    std::swap(stride[nd - 3], stride[nd - 2]);
    out->view = TensorView(out->buf.data(), t, Device::cpu(), shape, stride);
  } else if (layout == "last_strided" && nd >= 1) {
    Shape stored = shape;
    stored.back() *= 2;
    out->buf = Tensor::empty(stored, t);
    const TensorView s = out->buf.view();
    Shape stride(s.strides, s.strides + nd);
    stride.back() = 2;
    out->view = TensorView(out->buf.data(), t, Device::cpu(), shape, stride);
  } else if (layout == "overlap" && nd >= 2) {
    Shape stored = shape;
    stored[nd - 2] = 1;
    out->buf = Tensor::empty(stored, t);
    const TensorView s = out->buf.view();
    Shape stride(s.strides, s.strides + nd);
    stride[nd - 2] = 0;
    out->view = TensorView(out->buf.data(), t, Device::cpu(), shape, stride);
  } else {
    return case_error(row, "args.layout: '" + layout +
                               "' is not dense, transposed, last_strided or overlap (for this "
                               "shape)");
  }
  fill_view(out->view, fill);
  return Status::Ok();
}

// cos and sin of angles drawn from the case's seed, shape `cs_shape`, dtype `t`.
void make_angles(uint64_t seed, const Shape& cos_shape, const Shape& sin_shape, DType t, Input* cos,
                 Input* sin) {
  Input theta = data_input("theta", DType::fp64, cos_shape, seed, 3.14159);
  const auto* th = static_cast<const double*>(theta.buf.data());
  cos->name = "cos";
  sin->name = "sin";
  cos->buf = Tensor::empty(cos_shape, t);
  sin->buf = Tensor::empty(sin_shape, t);
  cos->view = cos->buf.view();
  sin->view = sin->buf.view();
  const int64_t es = dtype_size(t);
  const bool floating = is_floating(t);
  for (int64_t i = 0; i < cos->buf.numel(); ++i)
    store_value(static_cast<char*>(cos->buf.data()) + i * es, t, floating ? std::cos(th[i]) : 0);
  for (int64_t i = 0; i < sin->buf.numel(); ++i) {
    const double a = i < theta.buf.numel() ? th[i] : 0.5;
    store_value(static_cast<char*>(sin->buf.data()) + i * es, t, floating ? std::sin(a) : 0);
  }
}

class InplaceRopeDriver final : public FixedDriver {
 public:
  InplaceRopeDriver()
      : FixedDriver({.ops = {"inplace_rope_", "inplace_rope_bwd"},
                     .folder = "training/inplace_rope",
                     .fields = {"shape", "scale", "row_pad"},
                     .dtype = DType::fp32,
                     .args = {{"half", ArgKind::integer},
                              {"cos_batched", ArgKind::boolean},
                              {"cos_shape", ArgKind::int_list},
                              {"sin_shape", ArgKind::int_list},
                              {"cos_dtype", ArgKind::text},
                              {"inverse", ArgKind::boolean},
                              {"layout", ArgKind::text}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's, [B, L, H, Dh] or [T, H, Dh]"));
    const bool bwd = row.op == "inplace_rope_bwd";
    const Shape& shape = *cs.shape;
    if (shape.size() < 2) return case_error(row, "shape needs at least [H, Dh]");
    const int64_t dh = shape.back();
    const ArgValue* half = arg(cs, "half");
    const int64_t h2 = half ? half->i : dh / 2;
    Shape cos_shape;
    if (const ArgValue* given = arg(cs, "cos_shape")) {
      cos_shape = given->list;
    } else {
      const bool batched = arg(cs, "cos_batched") && arg(cs, "cos_batched")->b;
      if (batched && shape.size() == 4) cos_shape.push_back(shape[0]);
      cos_shape.push_back(shape.size() == 4 ? shape[1] : shape[0]);
      cos_shape.push_back(h2);
    }
    const ArgValue* sin_given = arg(cs, "sin_shape");
    const Shape sin_shape = sin_given ? sin_given->list : cos_shape;
    DType cdt = DType::fp32;
    if (const ArgValue* c = arg(cs, "cos_dtype"); c && c->s == "x") {
      cdt = p->dtype;
    } else if (c) {
      const std::optional<DType> named = dtype_from_name(c->s);
      if (!named) return case_error(row, "args.cos_dtype: '" + c->s + "' is not x or a dtype");
      cdt = *named;
    }
    p->scalars["inverse"] = arg(cs, "inverse") && arg(cs, "inverse")->b ? 1 : 0;
    p->inputs.assign(3, Input{});
    RECOPS_RETURN_IF_ERROR(make_x(row, bwd ? "dy" : "x", p->dtype, shape, 1, &p->inputs[0]));
    make_angles(tensor_seed(cs.seed, 2), cos_shape, sin_shape, cdt, &p->inputs[1], &p->inputs[2]);
    const int64_t rows =
        shape.size() >= 2 ? p->inputs[0].view.numel() / std::max<int64_t>(1, dh) : 0;
    p->sizes = {{"rows", rows}, {"Dh", dh}, {"R", 2 * h2}};
    if (!bwd) {
      Shape s;
      p->shape_error = inplace_rope_shape(args(*p, p->inputs[0].view), &s);
      p->outputs = {{"x", shape, p->dtype, 0}};
    } else {
      p->outputs = {{"dx", shape, p->dtype}};
    }
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "inplace_rope_") return inplace_rope_(args(p, out[0], in), ctx);
    const InplaceRopeArgs a = args(p, in[0], in);
    return inplace_rope_bwd({a.x, a.cos, a.sin, a.inverse}, out[0], ctx);
  }

  // The forward reads and writes the rope slice (2·rows·R elements, training_ops.md §6); the
  // backward reads dy and writes a new dx whole (2·rows·Dh). cos and sin are not counted.
  double bytes(const Problem& p) const override {
    const TensorView& x = p.inputs[0].view;
    const double rows = static_cast<double>(p.sizes[0].second);
    const double width = p.op == "inplace_rope_" ? static_cast<double>(p.sizes[2].second)
                                                 : static_cast<double>(p.sizes[1].second);
    return 2.0 * rows * width * static_cast<double>(x.itemsize());
  }

 private:
  static InplaceRopeArgs args(const Problem& p, const TensorView& x,
                              const std::vector<TensorView>& in = {}) {
    const auto& cs = in.empty() ? p.inputs[1].view : in[1];
    const auto& sn = in.empty() ? p.inputs[2].view : in[2];
    return {x, cs, sn, p.scalars.at("inverse") != 0};
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(InplaceRopeDriver);

}  // namespace recops::cli
