// training/rms_norm_gated/driver.cpp: the `recops` CLI's driver of rms_norm_gated and
// rms_norm_gated_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's and z's, required; x ~ scale, z ~ z_scale),
// out_shape (a wrong y / dx shape). args: eps (default 1e-6), activation (silu, sigmoid, swish;
// another name passes 3, for the refusal case), group_size (default 0), norm_before_gate
// (default true), the affine ones (weight, bias, want_dweight, want_dbias:
// training/common/row_case.h), z_scale (default 3).
#include "ops/training/common/case_args.h"
#include "ops/training/common/row_case.h"
#include "ops/training/rms_norm_gated/rms_norm_gated.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

int activation_of(const CaseSpec& cs) {
  return training_args::choice(cs, "activation", {"silu", "sigmoid", "swish"});
}

class RmsNormGatedDriver final : public training_args::WorkspaceDriver {
 public:
  RmsNormGatedDriver()
      : WorkspaceDriver({.ops = {"rms_norm_gated", "rms_norm_gated_bwd"},
                         .folder = "training/rms_norm_gated",
                         .fields = {"shape", "out_shape", "scale"},
                         .dtype = DType::fp32,
                         .args = row_case::affine_args({{"eps", ArgKind::number},
                                                        {"activation", ArgKind::text},
                                                        {"group_size", ArgKind::integer},
                                                        {"norm_before_gate", ArgKind::boolean},
                                                        {"z_scale", ArgKind::number}})}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const bool bwd = row.op == "rms_norm_gated_bwd";
    const int64_t D = shape.empty() ? 0 : shape.back();
    p->scalars["eps"] = number(cs, "eps", 1e-6);
    p->scalars["activation"] = activation_of(cs);
    p->scalars["group_size"] = number(cs, "group_size", 0);
    p->scalars["norm_before_gate"] = flag(cs, "norm_before_gate", true);
    row_case::affine_scalars(cs, p);
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_y", p->dtype, shape, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    p->inputs.push_back(data_input("z", p->dtype, shape, cs.seed + 1, number(cs, "z_scale", 3)));
    row_case::push_affine_inputs(cs, D, p);
    p->sizes = row_case::sizes(shape);
    const Shape out = cs.out_shape ? *cs.out_shape : shape;
    p->outputs = {{bwd ? "dx" : "y", out, p->dtype}};
    if (!bwd) return Status::Ok();
    p->outputs.push_back({"dz", shape, p->dtype});
    row_case::push_affine_grads(D, p);
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    return p.op == "rms_norm_gated_bwd" ? rms_norm_gated_bwd_workspace_bytes(bwd_args(p, in)) : 0;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "rms_norm_gated_bwd") {
      const RmsNormGatedBwdArgs a = bwd_args(p, in);
      const auto [dw, db] = row_case::affine_grads(a, out, 2);
      return rms_norm_gated_bwd(a, out[0], out[1], dw, db, ctx);
    }
    RmsNormGatedArgs a;
    size_t i = 0;
    a.x = in[i++];
    a.z = in[i++];
    fill_common(p, in, i, &a);
    return rms_norm_gated(a, out[0], ctx);
  }

 private:
  // weight, bias from in[i...] and the scalars, into a (forward or backward Args).
  template <class A>
  static void fill_common(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
    row_case::take_affine(p, in, i, a);
    a->eps = p.scalars.at("eps");
    a->activation = static_cast<GateActivation>(static_cast<int>(p.scalars.at("activation")));
    a->group_size = static_cast<int64_t>(p.scalars.at("group_size"));
    a->norm_before_gate = p.scalars.at("norm_before_gate") != 0;
  }
  static RmsNormGatedBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    RmsNormGatedBwdArgs a;
    a.grad_y = in[0];
    a.x = in[1];
    a.z = in[2];
    fill_common(p, in, 3, &a);
    row_case::take_wants(p, &a);
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(RmsNormGatedDriver);

}  // namespace recops::cli
