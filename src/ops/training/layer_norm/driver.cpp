// training/layer_norm/driver.cpp: the `recops` CLI's driver of layer_norm, swish_layer_norm and
// their backward ops: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's, required; x ~ U(-1,1)·scale + offset),
// out_shape (a wrong y / dx shape). args: eps (default 1e-5), the affine ones (weight, bias,
// want_dweight, want_dbias: training/common/row_case.h), offset (default 0: added to x, to test
// the centring).
#include "ops/training/common/case_args.h"
#include "ops/training/common/row_case.h"
#include "ops/training/layer_norm/layer_norm.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::number;

bool is_bwd(const std::string& op) {
  return op == "layer_norm_bwd" || op == "swish_layer_norm_bwd";
}
bool is_swish(const std::string& op) {
  return op == "swish_layer_norm" || op == "swish_layer_norm_bwd";
}

class LayerNormDriver final : public training_args::WorkspaceDriver {
 public:
  LayerNormDriver()
      : WorkspaceDriver(
            {.ops = {"layer_norm", "layer_norm_bwd", "swish_layer_norm", "swish_layer_norm_bwd"},
             .folder = "training/layer_norm",
             .fields = {"shape", "out_shape", "scale"},
             .dtype = DType::fp32,
             .args =
                 row_case::affine_args({{"eps", ArgKind::number}, {"offset", ArgKind::number}})}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const bool bwd = is_bwd(row.op);
    const int64_t D = shape.empty() ? 0 : shape.back();
    p->scalars["eps"] = number(cs, "eps", 1e-5);
    row_case::affine_scalars(cs, p);
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
    row_case::push_affine_inputs(cs, D, p);
    p->sizes = row_case::sizes(shape);
    const Shape out = cs.out_shape ? *cs.out_shape : shape;
    p->outputs = {{bwd ? "dx" : "y", out, p->dtype}};
    if (!bwd) return Status::Ok();
    row_case::push_affine_grads(D, p);
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
      const auto [dw, db] = row_case::affine_grads(a, out, 1);
      return is_swish(p.op) ? swish_layer_norm_bwd(a, out[0], dw, db, ctx)
                            : layer_norm_bwd(a, out[0], dw, db, ctx);
    }
    LayerNormArgs a;
    a.x = in[0];
    fill_common(p, in, 1, &a);
    return is_swish(p.op) ? swish_layer_norm(a, out[0], ctx) : layer_norm(a, out[0], ctx);
  }

 private:
  // weight, bias from in[i...] and eps, into a (forward or backward Args).
  template <class A>
  static void fill_common(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
    row_case::take_affine(p, in, i, a);
    a->eps = p.scalars.at("eps");
  }
  static LayerNormBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    LayerNormBwdArgs a;
    a.grad_y = in[0];
    a.x = in[1];
    fill_common(p, in, 2, &a);
    row_case::take_wants(p, &a);
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(LayerNormDriver);

}  // namespace recops::cli
