// training/fused_cross_entropy/driver.cpp: the `recops` CLI's driver of fused_cross_entropy,
// fused_cross_entropy_fwd and fused_cross_entropy_bwd: builds a case's inputs, calls the public
// entry, counts bytes (every input read once, every output written once: forward N·V·s, backward
// 2·N·V·s; tools/recops/driver.h).
//
// Case fields beyond the common ones: shape ([N, V], required). args: the cross-entropy ones
// (reduction, ignore_index, label_smoothing, z_loss_scale, softcap, label_dtype, ignore_every
// (1: every row), labels: training/common/ce_case.h), weight (boolean, default false: a [N] input
// of weight_dtype, default fp32, "same": logits'), neg_inf (boolean: one non-label logit of each
// row is -inf), precompute_grad, inplace (booleans). The backward's lse input is the reference
// forward's on the case's inputs; grad_loss is random.
#include <cmath>

#include "ops/training/common/case_args.h"
#include "ops/training/common/ce_case.h"
#include "ops/training/fused_cross_entropy/fused_cross_entropy.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using ce_case::find;
using ce_case::reduction_of;

bool flag(const CaseSpec& cs, const char* key) {
  return training_args::flag(cs, key, false);
}
// A dtype by name; "same": `def`.
Status dtype_arg(const CaseRow& row, const char* key, DType def, DType* t) {
  const ArgValue* v = find(*row.spec, key);
  if (!v || v->s == "same") return (*t = def), Status::Ok();
  const auto d = dtype_from_name(v->s);
  if (!d) return case_error(row, std::string("args.") + key + ": unknown dtype " + v->s);
  *t = *d;
  return Status::Ok();
}

class FusedCrossEntropyDriver final : public training_args::WorkspaceDriver {
 public:
  FusedCrossEntropyDriver()
      : WorkspaceDriver(
            {.ops = {"fused_cross_entropy", "fused_cross_entropy_fwd", "fused_cross_entropy_bwd"},
             .folder = "training/fused_cross_entropy",
             .fields = {"shape", "scale"},
             .dtype = DType::bf16,
             .args = ce_case::args({{"weight", ArgKind::boolean},
                                    {"weight_dtype", ArgKind::text},
                                    {"neg_inf", ArgKind::boolean},
                                    {"precompute_grad", ArgKind::boolean},
                                    {"inplace", ArgKind::boolean}})}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "[N, V]"));
    const Shape& shape = *cs.shape;
    const int64_t N = shape.size() > 0 ? shape[0] : 0;
    const int64_t V = shape.size() > 1 ? shape[1] : 0;
    DType ld, wd;
    RECOPS_RETURN_IF_ERROR(dtype_arg(row, "label_dtype", DType::int64, &ld));
    RECOPS_RETURN_IF_ERROR(dtype_arg(row, "weight_dtype", p->dtype, &wd));
    if (!find(cs, "weight_dtype")) wd = DType::fp32;
    p->scalars = ce_case::scalars(cs);
    p->scalars.insert({{"weight", flag(cs, "weight")},
                       {"precompute_grad", flag(cs, "precompute_grad")},
                       {"inplace", flag(cs, "inplace")}});
    const std::vector<int64_t> labels = ce_case::labels(cs, N, V);
    Input logits = data_input("logits", p->dtype, shape, cs.seed, cs.scale);
    if (flag(cs, "neg_inf") && V > 1) {
      for (int64_t i = 0; i < N; ++i) {
        const int64_t j = ((labels[i] + 1) % V + V) % V;
        visit_floating(p->dtype, [&](auto t) {
          using T = decltype(t);
          static_cast<T*>(logits.buf.data())[i * V + j] = from_double<T>(-INFINITY);
        });
      }
    }
    const DType st = p->dtype == DType::fp64 ? DType::fp64 : DType::fp32;
    const bool bwd = row.op == "fused_cross_entropy_bwd";
    const Shape loss_shape = reduction_of(cs) == 0 ? Shape{N} : Shape{};
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_loss", st, loss_shape, cs.seed + 1, 1.0));
    p->inputs.push_back(std::move(logits));
    p->inputs.push_back(int_input("labels", ld, labels));
    if (flag(cs, "weight")) {
      Input w = data_input("weight", wd, {N}, cs.seed + 2, 1.0);
      visit_floating(wd, [&](auto t) {  // weights in [0.25, 1.75)
        using T = decltype(t);
        T* d = static_cast<T*>(w.buf.data());
        for (int64_t i = 0; i < N; ++i) d[i] = from_double<T>(1.0 + 0.75 * to_double(d[i]));
      });
      p->inputs.push_back(std::move(w));
    }
    p->sizes = {{"N", N}, {"V", V}};
    if (bwd) {
      Input lse = data_input("lse", st, {N}, cs.seed + 4, 0.0);
      Tensor loss = Tensor::empty(loss_shape, st), z = Tensor::empty(loss_shape, st);
      const auto in = views(p->inputs);
      const FusedCrossEntropyArgs fa = fwd_args(*p, {in.begin() + 1, in.end()});
      Tensor ws = Tensor::empty({static_cast<int64_t>(std::max<size_t>(
                                    1, fused_cross_entropy_workspace_bytes(fa, true)))},
                                DType::uint8);
      Context ctx;
      ctx.impl = "reference";
      ctx.workspace = ws.data();
      ctx.workspace_bytes = fused_cross_entropy_workspace_bytes(fa, true);
      (void)fused_cross_entropy_fwd(fa, loss.view(), z.view(), lse.view, ctx);  // refused: lse 0
      p->inputs.push_back(std::move(lse));
      p->outputs = {{"grad_logits", shape, p->dtype}};
    } else {
      p->outputs = {{"loss", loss_shape, st}, {"z_loss", loss_shape, st}};
      if (row.op == "fused_cross_entropy_fwd") p->outputs.push_back({"lse", {N}, st});
    }
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.op == "fused_cross_entropy_bwd")
      return fused_cross_entropy_bwd_workspace_bytes(bwd_args(p, in));
    return fused_cross_entropy_workspace_bytes(fwd_args(p, in), p.op == "fused_cross_entropy_fwd");
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "fused_cross_entropy")
      return fused_cross_entropy(fwd_args(p, in), out[0], out[1], ctx);
    if (p.op == "fused_cross_entropy_fwd")
      return fused_cross_entropy_fwd(fwd_args(p, in), out[0], out[1], out[2], ctx);
    return fused_cross_entropy_bwd(bwd_args(p, in), out[0], ctx);
  }

 private:
  // in: logits, labels[, weight]
  static FusedCrossEntropyArgs fwd_args(const Problem& p, const std::vector<TensorView>& in) {
    FusedCrossEntropyArgs a;
    ce_case::scalars_into(p, &a);
    a.logits = in[0];
    a.labels = in[1];
    if (p.scalars.at("weight") != 0) a.weight = in[2];
    a.precompute_grad = p.scalars.at("precompute_grad") != 0;
    a.inplace = p.scalars.at("inplace") != 0;
    return a;
  }
  // in: grad_loss, logits, labels[, weight], lse
  static FusedCrossEntropyBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    FusedCrossEntropyBwdArgs a;
    ce_case::scalars_into(p, &a);
    a.grad_loss = in[0];
    a.logits = in[1];
    a.labels = in[2];
    const bool w = p.scalars.at("weight") != 0;
    if (w) a.weight = in[3];
    a.lse = in[w ? 4 : 3];
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(FusedCrossEntropyDriver);

}  // namespace recops::cli
