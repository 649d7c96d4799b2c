// training/norm_mul_dropout/driver.cpp: the `recops` CLI's driver of norm_mul_dropout and its
// backward: builds a case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (x's and u's, required; x ~ U(-1,1)·scale),
// out_shape (a wrong out / dx shape). args: eps (default 1e-5), dropout_ratio (default 0),
// training (default true), concat_ux, group_norm (default false), num_heads (default 1),
// linear_dim (default -1), seed (default 7), offset (default 0), weight_len (a wrong weight
// length, for the refusal case).
#include "ops/training/common/case_args.h"
#include "ops/training/common/row_case.h"
#include "ops/training/norm_mul_dropout/norm_mul_dropout.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class NormMulDropoutDriver final : public training_args::WorkspaceDriver {
 public:
  NormMulDropoutDriver()
      : WorkspaceDriver({.ops = {"norm_mul_dropout", "norm_mul_dropout_bwd"},
                         .folder = "training/norm_mul_dropout",
                         .fields = {"shape", "out_shape", "scale"},
                         .dtype = DType::fp32,
                         .args = {{"eps", ArgKind::number},
                                  {"dropout_ratio", ArgKind::number},
                                  {"training", ArgKind::boolean},
                                  {"concat_ux", ArgKind::boolean},
                                  {"group_norm", ArgKind::boolean},
                                  {"num_heads", ArgKind::integer},
                                  {"linear_dim", ArgKind::integer},
                                  {"seed", ArgKind::integer},
                                  {"offset", ArgKind::integer},
                                  {"weight_len", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's"));
    const Shape& shape = *cs.shape;
    const bool bwd = row.op == "norm_mul_dropout_bwd";
    const int64_t D = shape.empty() ? 0 : shape.back();
    p->scalars["eps"] = number(cs, "eps", 1e-5);
    p->scalars["dropout_ratio"] = number(cs, "dropout_ratio", 0.0);
    p->scalars["training"] = flag(cs, "training", true);
    p->scalars["concat_ux"] = flag(cs, "concat_ux", false);
    p->scalars["group_norm"] = flag(cs, "group_norm", false);
    p->scalars["num_heads"] = number(cs, "num_heads", 1);
    p->scalars["linear_dim"] = number(cs, "linear_dim", -1);
    p->scalars["seed"] = number(cs, "seed", 7);
    p->scalars["offset"] = number(cs, "offset", 0);
    const bool concat = p->scalars["concat_ux"] != 0;
    const int64_t heads = static_cast<int64_t>(p->scalars["num_heads"]);
    const int64_t nw = static_cast<int64_t>(number(
        cs, "weight_len",
        p->scalars["group_norm"] != 0 ? static_cast<double>(heads) : static_cast<double>(D)));
    Shape oshape = shape;
    if (!oshape.empty() && concat) oshape.back() *= 3;
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_out", p->dtype, oshape, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("x", p->dtype, shape, cs.seed, cs.scale));
    p->inputs.push_back(data_input("u", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("weight", p->dtype, {nw}, cs.seed + 3, 1.0));
    p->inputs.push_back(data_input("bias", p->dtype, {nw}, cs.seed + 4, 0.5));
    p->sizes = row_case::sizes(shape);
    if (!bwd) {
      p->outputs = {{"out", cs.out_shape ? *cs.out_shape : oshape, p->dtype}};
      return Status::Ok();
    }
    p->outputs = {{"dx", cs.out_shape ? *cs.out_shape : shape, p->dtype},
                  {"du", shape, p->dtype},
                  {"dweight", {nw}, p->dtype},
                  {"dbias", {nw}, p->dtype}};
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    return p.op == "norm_mul_dropout_bwd" ? norm_mul_dropout_bwd_workspace_bytes(bwd_args(p, in))
                                          : 0;
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "norm_mul_dropout_bwd")
      return norm_mul_dropout_bwd(bwd_args(p, in), out[0], out[1], out[2], out[3], ctx);
    NormMulDropoutArgs a;
    fill(p, in, 0, &a);
    return norm_mul_dropout(a, out[0], ctx);
  }

 private:
  // x, u, weight, bias from in[i...] and the scalars, into a (forward or backward Args).
  template <class A>
  static void fill(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
    a->x = in[i];
    a->u = in[i + 1];
    a->weight = in[i + 2];
    a->bias = in[i + 3];
    a->eps = p.scalars.at("eps");
    a->dropout_ratio = p.scalars.at("dropout_ratio");
    a->training = p.scalars.at("training") != 0;
    a->concat_ux = p.scalars.at("concat_ux") != 0;
    a->group_norm = p.scalars.at("group_norm") != 0;
    a->num_heads = static_cast<int64_t>(p.scalars.at("num_heads"));
    a->linear_dim = static_cast<int64_t>(p.scalars.at("linear_dim"));
    a->seed = static_cast<int64_t>(p.scalars.at("seed"));
    a->offset = static_cast<int64_t>(p.scalars.at("offset"));
  }
  static NormMulDropoutBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    NormMulDropoutBwdArgs a;
    a.grad_out = in[0];
    fill(p, in, 1, &a);
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(NormMulDropoutDriver);

}  // namespace recops::cli
