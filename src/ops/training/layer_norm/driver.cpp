// training/layer_norm/driver.cpp: the `recops` CLI's driver of layer_norm, swish_layer_norm and
// their backward ops: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, required; x ~ U(-1,1)·scale + offset),
// out_shape (a wrong y / dx shape). args: eps (default 1e-5), weight, bias (default true: [D]
// inputs of x's dtype), want_dweight, want_dbias (default true), offset (default 0: added to x,
// to test the centring).
#include "ops/training/common/case_args.h"
#include "ops/training/layer_norm/layer_norm.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

bool is_bwd(const std::string& op) {
  return op == "layer_norm_bwd" || op == "swish_layer_norm_bwd";
}
bool is_swish(const std::string& op) {
  return op == "swish_layer_norm" || op == "swish_layer_norm_bwd";
}

class LayerNormDriver final : public FixedDriver {
 public:
  LayerNormDriver()
      : FixedDriver(
            {.ops = {"layer_norm", "layer_norm_bwd", "swish_layer_norm", "swish_layer_norm_bwd"},
             .folder = "training/layer_norm",
             .fields = {"shape", "out_shape", "scale"},
             .dtype = DType::fp32,
             .args = {{"eps", ArgKind::number},
                      {"weight", ArgKind::boolean},
                      {"bias", ArgKind::boolean},
                      {"want_dweight", ArgKind::boolean},
                      {"want_dbias", ArgKind::boolean},
                      {"offset", ArgKind::number}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const bool bwd = is_bwd(row.op);
    const int64_t D = shape.empty() ? 0 : shape.back();
    p->scalars["eps"] = number(cs, "eps", 1e-5);
    p->scalars["weight"] = flag(cs, "weight", true);
    p->scalars["bias"] = flag(cs, "bias", true);
    p->scalars["want_dweight"] = flag(cs, "want_dweight", true);
    p->scalars["want_dbias"] = flag(cs, "want_dbias", true);
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_y", p->dtype, shape, cs.seed + 2, 1.0));
    Input x = data_input("x", p->dtype, shape, cs.seed, cs.scale);
    const double offset = number(cs, "offset", 0.0);
    if (offset != 0.0) {
      TensorView v = x.buf.view();
      visit_floating(v.dtype, [&](auto t) {
        using T = decltype(t);
        T* q = v.ptr<T>();
        for (int64_t i = 0; i < v.numel(); ++i) q[i] = from_double<T>(to_double(q[i]) + offset);
      });
    }
    p->inputs.push_back(std::move(x));
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
    if (p->scalars["weight"] != 0 && p->scalars["want_dweight"] != 0)
      p->outputs.push_back({"dweight", {D}, p->dtype});
    if (p->scalars["bias"] != 0 && p->scalars["want_dbias"] != 0)
      p->outputs.push_back({"dbias", {D}, p->dtype});
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    return is_bwd(p.op) ? layer_norm_bwd_workspace_bytes(bwd_args(p, in)) : 0;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (is_bwd(p.op)) {
      const LayerNormBwdArgs a = bwd_args(p, in);
      size_t i = 1;  // dweight, then dbias, when produced
      const TensorView* dw = a.weight && a.want_dweight ? &out[i++] : nullptr;
      const TensorView* db = a.bias && a.want_dbias ? &out[i++] : nullptr;
      return is_swish(p.op) ? swish_layer_norm_bwd(a, out[0], dw, db, ctx)
                            : layer_norm_bwd(a, out[0], dw, db, ctx);
    }
    LayerNormArgs a;
    a.x = in[0];
    fill_common(p, in, 1, &a);
    return is_swish(p.op) ? swish_layer_norm(a, out[0], ctx) : layer_norm(a, out[0], ctx);
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
  // weight, bias from in[i...] and eps, into a (forward or backward Args).
  template <class A>
  static void fill_common(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
    if (p.scalars.at("weight") != 0) a->weight = in[i++];
    if (p.scalars.at("bias") != 0) a->bias = in[i++];
    a->eps = p.scalars.at("eps");
  }
  static LayerNormBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    LayerNormBwdArgs a;
    a.grad_y = in[0];
    a.x = in[1];
    fill_common(p, in, 2, &a);
    a.want_dweight = p.scalars.at("want_dweight") != 0;
    a.want_dbias = p.scalars.at("want_dbias") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(LayerNormDriver);

}  // namespace recops::cli
