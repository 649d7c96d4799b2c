// training/rms_norm/driver.cpp: the `recops` CLI's driver of rms_norm, rms_norm_bwd,
// rms_norm_rstd and rms_norm_rstd_bwd: builds a case's inputs, calls the public entry, counts
// bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, required), out_dtype (rms_norm_rstd*: r's
// dtype), out_shape (a wrong y / r / dx shape). args: eps (default 1e-6), weight_offset (default
// 0), weight (default true: a [D] weight input of x's dtype), want_dweight (default true).
#include <algorithm>

#include "ops/training/common/case_args.h"
#include "ops/training/common/row_case.h"
#include "ops/training/rms_norm/rms_norm.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class RmsNormDriver final : public FixedDriver {
 public:
  RmsNormDriver()
      : FixedDriver({.ops = {"rms_norm", "rms_norm_bwd", "rms_norm_rstd", "rms_norm_rstd_bwd"},
                     .folder = "training/rms_norm",
                     .fields = {"shape", "out_dtype", "out_shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"eps", ArgKind::number},
                              {"weight_offset", ArgKind::number},
                              {"weight", ArgKind::boolean},
                              {"want_dweight", ArgKind::boolean}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const bool rstd = row.op == "rms_norm_rstd" || row.op == "rms_norm_rstd_bwd";
    const bool bwd = row.op == "rms_norm_bwd" || row.op == "rms_norm_rstd_bwd";
    const bool weight = !rstd && flag(cs, "weight", true);
    const int64_t D = shape.empty() ? 0 : shape.back();
    p->scalars["eps"] = number(cs, "eps", 1e-6);
    p->scalars["weight_offset"] = number(cs, "weight_offset", 0.0);
    p->scalars["weight"] = weight;
    p->scalars["want_dweight"] = flag(cs, "want_dweight", true);
    const DType r_dtype = row.out_dtype.value_or(DType::fp32);
    p->scalars["r_dtype"] = static_cast<double>(static_cast<int>(r_dtype));
    Shape r_shape = shape;
    if (!r_shape.empty()) r_shape.back() = 1;
    p->inputs.clear();
    if (bwd)  // the incoming gradient: of y (x's shape) or of r
      p->inputs.push_back(data_input(rstd ? "grad_r" : "grad_y", rstd ? r_dtype : p->dtype,
                                     rstd ? r_shape : shape, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    if (weight) p->inputs.push_back(data_input("weight", p->dtype, {D}, cs.seed + 1, 1.0));
    p->sizes = row_case::sizes(shape);
    Shape out = row.op == "rms_norm_rstd" ? r_shape : shape;
    if (cs.out_shape) out = *cs.out_shape;
    const DType out_dtype = row.op == "rms_norm_rstd" ? r_dtype : p->dtype;
    p->outputs = {
        {row.op == "rms_norm" ? "y" : (row.op == "rms_norm_rstd" ? "r" : "dx"), out, out_dtype}};
    if (row.op == "rms_norm_bwd" && weight && p->scalars["want_dweight"] != 0)
      p->outputs.push_back({"dweight", {D}, p->dtype});
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>& out) const override {
    if (p.op != "rms_norm_bwd") return 0;
    return rms_norm_bwd_workspace_bytes(bwd_args(p, in));
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const double eps = p.scalars.at("eps");
    const std::optional<DType> r_dtype =
        static_cast<DType>(static_cast<int>(p.scalars.at("r_dtype")));
    if (p.op == "rms_norm")
      return rms_norm({in[0], weight_of(p, in, 1), eps, p.scalars.at("weight_offset")}, out[0],
                      ctx);
    if (p.op == "rms_norm_bwd")
      return rms_norm_bwd(bwd_args(p, in), out[0], out.size() > 1 ? &out[1] : nullptr, ctx);
    if (p.op == "rms_norm_rstd") return rms_norm_rstd({in[0], eps, r_dtype}, out[0], ctx);
    return rms_norm_rstd_bwd({in[0], in[1], eps, r_dtype}, out[0], ctx);
  }

  // The fp64 golden (the reference) with the workspace the entry requires of rms_norm_bwd.
  Status golden(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto in = views(p.inputs);
    const auto o = views(*out);
    Tensor ws = Tensor::empty(
        {static_cast<int64_t>(std::max<size_t>(1, workspace_bytes(p, in, o)))}, DType::uint8);
    Context ctx;
    ctx.impl = "reference";
    ctx.workspace = ws.data();
    ctx.workspace_bytes = workspace_bytes(p, in, o);
    return run(p, in, o, ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  static std::optional<TensorView> weight_of(const Problem& p, const std::vector<TensorView>& in,
                                             size_t i) {
    if (p.scalars.at("weight") == 0) return std::nullopt;
    return in[i];
  }
  static RmsNormBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    return {in[0],
            in[1],
            weight_of(p, in, 2),
            p.scalars.at("eps"),
            p.scalars.at("weight_offset"),
            p.scalars.at("want_dweight") != 0};
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(RmsNormDriver);

}  // namespace recops::cli
