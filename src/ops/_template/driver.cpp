// __family__/__op__/driver.cpp: the `recops` CLI's driver of __op__ and __op___bwd: builds a
// case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, required); args: factor (default 1.5).
#include "ops/__family__/__op__/__op__.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

double factor_of(const CaseSpec& cs) {
  const auto it = cs.args.find("factor");
  return it == cs.args.end() ? 1.5 : it->second.f;
}

class __Op__Driver final : public FixedDriver {
 public:
  __Op__Driver()
      : FixedDriver({.ops = {"__op__", "__op___bwd"},
                     .folder = "__family__/__op__",
                     .fields = {"shape"},
                     .dtype = DType::fp32,
                     .args = {{"factor", ArgKind::number}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    p->inputs.clear();
    if (row.op == "__op___bwd")
      p->inputs.push_back(data_input("dout", p->dtype, shape, cs.seed + 1, cs.scale));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    p->sizes = {{"N", n}};
    p->scalars["factor"] = factor_of(cs);
    p->outputs = {{row.op == "__op__" ? "out" : "dx", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const double f = p.scalars.at("factor");
    if (p.op == "__op__") return __op__({in[0], f}, out[0], ctx);
    return __op___bwd({in[0], in[1], f}, out[0], ctx);
  }

  double bytes(const Problem& p) const override {
    // x read once, out written once (the backward reads dout, not x).
    const TensorView& x = p.inputs[0].view;
    return 2.0 * static_cast<double>(x.numel() * x.itemsize());
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(__Op__Driver);

}  // namespace recops::cli
