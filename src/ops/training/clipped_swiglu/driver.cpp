// training/clipped_swiglu/driver.cpp: the `recops` CLI's driver of clipped_swiglu and
// clipped_swiglu_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, [..., 2I], required), scale. args: alpha,
// limit, linear_offset (numbers; default the schema's), interleaved (boolean, default true),
// specials (boolean: every 5th element of x cycles through NaN, L, -L, 2L+1, -(2L+1), +inf, -inf,
// so that the clamps' boundaries, their outsides and NaN/inf are all met).
#include <cmath>
#include <limits>

#include "ops/training/clipped_swiglu/clipped_swiglu.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

double num(const CaseSpec& cs, const char* key, double def) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? def : it->second.f;
}
bool flag(const CaseSpec& cs, const char* key, bool def) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? def : it->second.b;
}

// Overwrites every 5th element of x with a value from the special cycle.
void put_specials(const TensorView& x, double L) {
  const double big = std::isinf(L) ? 1e30 : 2 * L + 1;
  const double inf = std::numeric_limits<double>::infinity();
  const double cycle[] = {std::numeric_limits<double>::quiet_NaN(), L, -L, big, -big, inf, -inf};
  visit_floating(x.dtype, [&](auto t) {
    using T = decltype(t);
    T* px = static_cast<T*>(x.data);
    for (int64_t e = 0, k = 0; e < x.numel(); e += 5, ++k) px[e] = from_double<T>(cycle[k % 7]);
  });
}

class ClippedSwigluDriver final : public FixedDriver {
 public:
  ClippedSwigluDriver()
      : FixedDriver({.ops = {"clipped_swiglu", "clipped_swiglu_bwd"},
                     .folder = "training/clipped_swiglu",
                     .fields = {"shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"alpha", ArgKind::number},
                              {"limit", ArgKind::number},
                              {"linear_offset", ArgKind::number},
                              {"interleaved", ArgKind::boolean},
                              {"specials", ArgKind::boolean}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's, [..., 2I]"));
    const bool bwd = row.op == "clipped_swiglu_bwd";
    const Shape& shape = *cs.shape;
    p->scalars["alpha"] = num(cs, "alpha", 1.702);
    p->scalars["limit"] = num(cs, "limit", 7.0);
    p->scalars["linear_offset"] = num(cs, "linear_offset", 1.0);
    p->scalars["interleaved"] = flag(cs, "interleaved", true) ? 1 : 0;
    p->inputs.clear();
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    if (flag(cs, "specials", false) && is_floating(p->dtype))
      put_specials(p->inputs[0].view, p->scalars["limit"]);
    Shape y_shape;
    p->shape_error = clipped_swiglu_shape(args(*p, p->inputs[0].view), &y_shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (bwd) p->inputs.push_back(data_input("dy", p->dtype, y_shape, cs.seed + 1, 1.0));
    const int64_t I = y_shape.back();
    p->sizes = {{"rows", I == 0 ? 0 : p->inputs[0].view.numel() / (2 * I)}, {"I", I}};
    p->outputs = {{bwd ? "dx" : "y", bwd ? shape : y_shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "clipped_swiglu") return clipped_swiglu(args(p, in[0]), out[0], ctx);
    ClippedSwigluBwdArgs b;
    static_cast<ClippedSwigluArgs&>(b) = args(p, in[0]);
    b.dy = in[1];
    return clipped_swiglu_bwd(b, out[0], ctx);
  }

  // Forward: x read, y written (3·rows·I elements); backward: x and dy read, dx written (5·rows·I).
  double bytes(const Problem& p) const override {
    const TensorView& x = p.inputs[0].view;
    const double xb = static_cast<double>(x.numel() * x.itemsize());
    return p.op == "clipped_swiglu" ? 1.5 * xb : 2.5 * xb;
  }

 private:
  static ClippedSwigluArgs args(const Problem& p, const TensorView& x) {
    return {x, p.scalars.at("alpha"), p.scalars.at("limit"), p.scalars.at("linear_offset"),
            p.scalars.at("interleaved") != 0};
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ClippedSwigluDriver);

}  // namespace recops::cli
