// training/l2norm/driver.cpp: the `recops` CLI's driver of l2norm and l2norm_bwd: builds a
// case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, required), out_dtype (y's, default x's),
// out_shape (a wrong output shape), scale. args: eps (default 1e-6).
#include "ops/training/common/row_case.h"
#include "ops/training/l2norm/l2norm.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class L2normDriver final : public FixedDriver {
 public:
  L2normDriver()
      : FixedDriver({.ops = {"l2norm", "l2norm_bwd"},
                     .folder = "training/l2norm",
                     .fields = {"shape", "out_dtype", "out_shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"eps", ArgKind::number}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const auto eps = cs.args.find("eps");
    p->scalars["eps"] = eps == cs.args.end() ? 1e-6 : eps->second.f;
    const DType y_dtype = row.out_dtype.value_or(p->dtype);
    p->scalars["y_dtype"] = static_cast<double>(static_cast<int>(y_dtype));
    p->inputs.clear();
    if (row.op == "l2norm_bwd")
      p->inputs.push_back(data_input("grad_y", y_dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    p->sizes = row_case::sizes(shape);
    const bool fwd = row.op == "l2norm";
    p->outputs = {
        {fwd ? "y" : "dx", cs.out_shape ? *cs.out_shape : shape, fwd ? y_dtype : p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const double eps = p.scalars.at("eps");
    const std::optional<DType> t = static_cast<DType>(static_cast<int>(p.scalars.at("y_dtype")));
    if (p.op == "l2norm") return l2norm({in[0], eps, t}, out[0], ctx);
    return l2norm_bwd({in[0], in[1], eps, t}, out[0], ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(L2normDriver);

}  // namespace recops::cli
