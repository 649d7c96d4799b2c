// training/rms_norm_gated/driver.cpp: the `recops` CLI's driver of rms_norm_gated and
// rms_norm_gated_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's and z's, required; x ~ scale, z ~ z_scale),
// out_shape (a wrong y / dx shape). args: eps (default 1e-6), activation (silu, sigmoid, swish;
// another name passes 3, for the refusal case), group_size (default 0), norm_before_gate
// (default true), weight, bias (default true: [D] inputs of x's dtype), want_dweight, want_dbias
// (default true), z_scale (default 3).
#include "ops/training/common/case_args.h"
#include "ops/training/rms_norm_gated/rms_norm_gated.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

int activation_of(const CaseSpec& cs) {
  const auto it = cs.args.find("activation");
  if (it == cs.args.end()) return 0;
  const std::string& s = it->second.s;
  return s == "silu" ? 0 : s == "sigmoid" ? 1 : s == "swish" ? 2 : 3;
}

class RmsNormGatedDriver final : public FixedDriver {
 public:
  RmsNormGatedDriver()
      : FixedDriver({.ops = {"rms_norm_gated", "rms_norm_gated_bwd"},
                     .folder = "training/rms_norm_gated",
                     .fields = {"shape", "out_shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"eps", ArgKind::number},
                              {"activation", ArgKind::text},
                              {"group_size", ArgKind::integer},
                              {"norm_before_gate", ArgKind::boolean},
                              {"weight", ArgKind::boolean},
                              {"bias", ArgKind::boolean},
                              {"want_dweight", ArgKind::boolean},
                              {"want_dbias", ArgKind::boolean},
                              {"z_scale", ArgKind::number}}}) {}

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
    p->scalars["weight"] = flag(cs, "weight", true);
    p->scalars["bias"] = flag(cs, "bias", true);
    p->scalars["want_dweight"] = flag(cs, "want_dweight", true);
    p->scalars["want_dbias"] = flag(cs, "want_dbias", true);
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_y", p->dtype, shape, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    p->inputs.push_back(data_input("z", p->dtype, shape, cs.seed + 1, number(cs, "z_scale", 3)));
    if (p->scalars["weight"] != 0)
      p->inputs.push_back(data_input("weight", p->dtype, {D}, cs.seed + 3, 1.0));
    if (p->scalars["bias"] != 0)
      p->inputs.push_back(data_input("bias", p->dtype, {D}, cs.seed + 4, 0.5));
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    p->sizes = {{"rows", D > 0 ? n / D : 0}, {"D", D}};
    const Shape out = cs.out_shape ? *cs.out_shape : shape;
    p->outputs = {{bwd ? "dx" : "y", out, p->dtype}};
    if (!bwd) return Status::Ok();
    p->outputs.push_back({"dz", shape, p->dtype});
    if (p->scalars["weight"] != 0 && p->scalars["want_dweight"] != 0)
      p->outputs.push_back({"dweight", {D}, p->dtype});
    if (p->scalars["bias"] != 0 && p->scalars["want_dbias"] != 0)
      p->outputs.push_back({"dbias", {D}, p->dtype});
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
      size_t i = 2;  // dweight, then dbias, when produced
      const TensorView* dw = a.weight && a.want_dweight ? &out[i++] : nullptr;
      const TensorView* db = a.bias && a.want_dbias ? &out[i++] : nullptr;
      return rms_norm_gated_bwd(a, out[0], out[1], dw, db, ctx);
    }
    RmsNormGatedArgs a;
    size_t i = 0;
    a.x = in[i++];
    a.z = in[i++];
    fill_common(p, in, i, &a);
    return rms_norm_gated(a, out[0], ctx);
  }

  // The fp64 golden (the reference) with the workspace the entry requires of the backward.
  Status golden(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto in = views(p.inputs);
    const auto o = views(*out);
    Context ctx;
    ctx.impl = "reference";
    ctx.workspace_bytes = workspace_bytes(p, in, o);
    Tensor ws = Tensor::empty({static_cast<int64_t>(ctx.workspace_bytes) + 1}, DType::uint8);
    ctx.workspace = ws.data();
    return run(p, in, o, ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  // weight, bias from in[i...] and the scalars, into a (forward or backward Args).
  template <class A>
  static void fill_common(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
    if (p.scalars.at("weight") != 0) a->weight = in[i++];
    if (p.scalars.at("bias") != 0) a->bias = in[i++];
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
    a.want_dweight = p.scalars.at("want_dweight") != 0;
    a.want_dbias = p.scalars.at("want_dbias") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(RmsNormGatedDriver);

}  // namespace recops::cli
