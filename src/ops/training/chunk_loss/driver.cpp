// training/chunk_loss/driver.cpp: the `recops` CLI's driver of chunk_loss, chunk_loss_fwd and
// chunk_loss_bwd:
// builds a case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape ([N, V], required; the hidden size D is args.D, so that
// the shape's product stays a tensor's), scale (hidden's; the weight's values are scaled by
// 3/sqrt(D) on top). args: the cross-entropy ones (reduction, ignore_index, label_smoothing,
// z_loss_scale, softcap, label_dtype, ignore_every, labels: training/common/ce_case.h), D
// (required), bias, token_weight (booleans, default false; token_weight is fp32 in [0.25, 1.75)),
// token_chunk, vocab_chunk (default 0), accum (fp32 or input; default fp32). The backward's
// grad_loss is random; chunk_loss_fwd's gradients are those of grad_loss = 1.
#include <cmath>

#include "ops/training/chunk_loss/chunk_loss.h"
#include "ops/training/common/case_args.h"
#include "ops/training/common/ce_case.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using ce_case::find;
using ce_case::reduction_of;
using training_args::flag;

class ChunkLossDriver final : public training_args::WorkspaceDriver {
 public:
  ChunkLossDriver()
      : WorkspaceDriver({.ops = {"chunk_loss", "chunk_loss_fwd", "chunk_loss_bwd"},
                         .folder = "training/chunk_loss",
                         .fields = {"shape", "scale"},
                         .dtype = DType::bf16,
                         .args = ce_case::args({{"D", ArgKind::integer},
                                                {"bias", ArgKind::boolean},
                                                {"token_weight", ArgKind::boolean},
                                                {"token_chunk", ArgKind::integer},
                                                {"vocab_chunk", ArgKind::integer},
                                                {"accum", ArgKind::text}})}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "[N, V]"));
    const Shape& shape = *cs.shape;
    if (shape.size() != 2) return case_error(row, "shape must be [N, V]");
    if (!find(cs, "D")) return case_error(row, "needs args.D (the hidden size)");
    const int64_t N = shape[0], V = shape[1], D = find(cs, "D")->i;
    DType ld = DType::int64;
    if (const ArgValue* v = find(cs, "label_dtype")) {
      const auto d = dtype_from_name(v->s);
      if (!d) return case_error(row, "args.label_dtype: unknown dtype " + v->s);
      ld = *d;
    }
    const ArgValue* accum = find(cs, "accum");
    if (accum && accum->s != "fp32" && accum->s != "input")
      return case_error(row, "args.accum must be fp32 or input");
    p->scalars = ce_case::scalars(cs);
    p->scalars.insert({{"bias", flag(cs, "bias", false)},
                       {"token_weight", flag(cs, "token_weight", false)},
                       {"token_chunk", find(cs, "token_chunk") ? find(cs, "token_chunk")->i : 0.0},
                       {"vocab_chunk", find(cs, "vocab_chunk") ? find(cs, "vocab_chunk")->i : 0.0},
                       {"accum_input", accum && accum->s == "input"}});
    // accum_dtype under the table's name (`recops record`'s manifest); unset = fp32.
    if (accum && accum->s == "input")
      p->scalars["accum_dtype"] = static_cast<double>(static_cast<int>(p->dtype));
    const std::vector<int64_t> labels = ce_case::labels(cs, N, V);
    const DType st = p->dtype == DType::fp64 ? DType::fp64 : DType::fp32;
    const bool bwd = row.op == "chunk_loss_bwd";
    const Shape loss_shape = reduction_of(cs) == 0 ? Shape{N} : Shape{};
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("grad_loss", st, loss_shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("hidden", p->dtype, {N, D}, cs.seed, cs.scale));
    const double ws = 3.0 / std::sqrt(static_cast<double>(std::max<int64_t>(D, 1)));
    p->inputs.push_back(data_input("weight", p->dtype, {V, D}, cs.seed + 5, ws));
    p->inputs.push_back(int_input("labels", ld, labels));
    if (flag(cs, "bias", false))
      p->inputs.push_back(data_input("bias", p->dtype, {V}, cs.seed + 6, 1.0));
    if (flag(cs, "token_weight", false)) {
      Input w = data_input("token_weight", DType::fp32, {N}, cs.seed + 2, 1.0);
      float* d = static_cast<float*>(static_cast<void*>(w.buf.data()));
      for (int64_t i = 0; i < N; ++i) d[i] = 1.0f + 0.75f * d[i];  // in [0.25, 1.75)
      p->inputs.push_back(std::move(w));
    }
    p->sizes = {{"N", N}, {"D", D}, {"V", V}};
    // chunk_loss_fwd: the loss, then for "sum"/"mean" the gradients (as chunk_loss_bwd's).
    const bool grads = bwd || (row.op == "chunk_loss_fwd" && reduction_of(cs) != 0);
    p->outputs.clear();
    if (!bwd) p->outputs = {{"loss", loss_shape, st}, {"z_loss", loss_shape, st}};
    if (grads) {
      p->outputs.push_back({"d_hidden", {N, D}, p->dtype});
      p->outputs.push_back({"d_weight", {V, D}, p->dtype});
      if (flag(cs, "bias", false)) p->outputs.push_back({"d_bias", {V}, p->dtype});
    }
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.op == "chunk_loss_bwd") return chunk_loss_bwd_workspace_bytes(bwd_args(p, in));
    if (p.op == "chunk_loss_fwd") return chunk_loss_fwd_workspace_bytes(fwd_args(p, in, 0));
    return chunk_loss_workspace_bytes(fwd_args(p, in, 0));
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "chunk_loss") return chunk_loss(fwd_args(p, in, 0), out[0], out[1], ctx);
    if (p.op == "chunk_loss_fwd") {
      const auto g = [&](size_t k) { return out.size() > k ? &out[k] : nullptr; };
      return chunk_loss_fwd(fwd_args(p, in, 0), out[0], out[1], g(2), g(3), g(4), ctx);
    }
    return chunk_loss_bwd(bwd_args(p, in), out[0], out[1], out.size() > 2 ? &out[2] : nullptr, ctx);
  }

  // The double standard's plain baseline: logits and G rounded to the input dtype.
  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto in = views(p.inputs);
    const auto o = views(*out);
    if (p.op == "chunk_loss") return chunk_loss_plain(fwd_args(p, in, 0), o[0], o[1]);
    if (p.op == "chunk_loss_fwd") {  // the plain forward, then the plain backward of grad 1
      const ChunkLossArgs a = fwd_args(p, in, 0);
      RECOPS_RETURN_IF_ERROR(chunk_loss_plain(a, o[0], o[1]));
      if (o.size() == 2) return Status::Ok();
      ChunkLossBwdArgs b;
      static_cast<ChunkLossArgs&>(b) = a;
      Tensor one = Tensor::empty({}, o[0].dtype, Device::cpu());
      if (o[0].dtype == DType::fp64)
        *static_cast<double*>(one.data()) = 1.0;
      else
        *static_cast<float*>(one.data()) = 1.0f;
      b.grad_loss = one.view();
      return chunk_loss_bwd_plain(b, o[2], o[3], o.size() > 4 ? &o[4] : nullptr);
    }
    return chunk_loss_bwd_plain(bwd_args(p, in), o[0], o[1], o.size() > 2 ? &o[2] : nullptr);
  }

  // 2·N·D·V forward; 6·N·D·V backward (the logits recomputed, then the dh and dW products) and
  // chunk_loss_fwd with its gradients (the logits, then the dh and dW products).
  double flops(const Problem& p) const override {
    double n = 1;
    for (const auto& [k, v] : p.sizes) n *= static_cast<double>(v);
    const bool grads =
        p.op == "chunk_loss_bwd" || (p.op == "chunk_loss_fwd" && p.outputs.size() > 2);
    return (grads ? 6.0 : 2.0) * n;
  }

 private:
  // in (from `at`): hidden, weight, labels[, bias][, token_weight]
  static ChunkLossArgs fwd_args(const Problem& p, const std::vector<TensorView>& in, size_t at) {
    ChunkLossArgs a;
    ce_case::scalars_into(p, &a);
    a.token_chunk = static_cast<int64_t>(p.scalars.at("token_chunk"));
    a.vocab_chunk = static_cast<int64_t>(p.scalars.at("vocab_chunk"));
    a.hidden = in[at];
    a.weight = in[at + 1];
    a.labels = in[at + 2];
    size_t k = at + 3;
    if (p.scalars.at("bias") != 0) a.bias = in[k++];
    if (p.scalars.at("token_weight") != 0) a.token_weight = in[k++];
    if (p.scalars.at("accum_input") != 0) a.accum_dtype = p.dtype;
    return a;
  }
  // in: grad_loss, then the forward's
  static ChunkLossBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    ChunkLossBwdArgs a;
    static_cast<ChunkLossArgs&>(a) = fwd_args(p, in, 1);
    a.grad_loss = in[0];
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkLossDriver);

}  // namespace recops::cli
