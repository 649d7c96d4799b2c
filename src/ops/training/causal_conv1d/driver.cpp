// training/causal_conv1d/driver.cpp: the `recops` CLI's driver of causal_conv1d and
// causal_conv1d_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape ([B, D, T], required; with lengths/offsets T is
// replaced by the offsets' total and B must be 1), lengths | offsets, offsets_dtype. args: W
// (default 4), channel_last (x, residual and grad_y as transposed views of [B, T, D]),
// weight_layout (DW | WD), activation (none | silu | swish; another name passes 3), bias,
// initial_state, final_state (default false), state_fp32 (fp32 states), state_len (default 0),
// residual, seq_idx_every (k > 0: seq_idx[b, t] = t / k), want_dbias, want_dinitial_state,
// want_dresidual (default true).
#include "ops/training/causal_conv1d/causal_conv1d.h"
#include "ops/training/common/case_args.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

int activation_of(const CaseSpec& cs) {
  return training_args::choice(cs, "activation", {"none", "silu", "swish"});
}

int layout_of(const CaseSpec& cs) {
  return training_args::choice(cs, "weight_layout", {"DW", "WD"});
}

class CausalConv1dDriver final : public FixedDriver {
 public:
  CausalConv1dDriver()
      : FixedDriver({.ops = {"causal_conv1d", "causal_conv1d_bwd"},
                     .folder = "training/causal_conv1d",
                     .fields = {"shape", "scale", "lengths", "offsets", "offsets_dtype"},
                     .dtype = DType::fp32,
                     .args = {{"W", ArgKind::integer},
                              {"channel_last", ArgKind::boolean},
                              {"weight_layout", ArgKind::text},
                              {"activation", ArgKind::text},
                              {"bias", ArgKind::boolean},
                              {"initial_state", ArgKind::boolean},
                              {"final_state", ArgKind::boolean},
                              {"state_fp32", ArgKind::boolean},
                              {"state_len", ArgKind::integer},
                              {"residual", ArgKind::boolean},
                              {"seq_idx_every", ArgKind::integer},
                              {"want_dbias", ArgKind::boolean},
                              {"want_dinitial_state", ArgKind::boolean},
                              {"want_dresidual", ArgKind::boolean}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "x's [B, D, T]"));
    const bool bwd = row.op == "causal_conv1d_bwd";
    Shape shape = *cs.shape;
    if (shape.size() != 3) return case_error(row, "shape must be [B, D, T]");
    const bool packed = cs.lengths || cs.offsets;
    Input off;
    if (packed) {
      RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
      shape[2] = p->offsets.empty() ? 0 : std::max<int64_t>(0, p->offsets.back());
    }
    const int64_t B = shape[0], D = shape[1], T = shape[2];
    const int64_t W = static_cast<int64_t>(number(cs, "W", 4));
    const int lay = layout_of(cs);
    const int64_t N = packed ? static_cast<int64_t>(p->offsets.size()) - 1 : B;
    const int64_t sl = static_cast<int64_t>(number(cs, "state_len", 0));
    const int64_t S = sl == 0 ? W - 1 : sl;
    auto& sc = p->scalars;
    sc["W"] = static_cast<double>(W);
    sc["weight_layout"] = lay;
    sc["activation"] = activation_of(cs);
    sc["state_len"] = static_cast<double>(sl);
    for (const char* f :
         {"bias", "initial_state", "final_state", "state_fp32", "residual", "channel_last"})
      sc[f] = flag(cs, f, f == std::string("bias"));
    for (const char* f : {"want_dbias", "want_dinitial_state", "want_dresidual"})
      sc[f] = flag(cs, f, true);
    sc["output_final_state"] = sc["final_state"];  // the table's name (`recops record`)
    sc["seq_idx_every"] = number(cs, "seq_idx_every", 0);
    sc["packed"] = packed;
    const DType sd = sc["state_fp32"] != 0 ? DType::fp32 : p->dtype;
    const Shape sshape = {std::max<int64_t>(N, 0), D, std::max<int64_t>(S, 0)};
    auto btd = [&](const char* name, uint64_t seed, double scale) {
      if (sc["channel_last"] == 0) return data_input(name, p->dtype, shape, seed, scale);
      Input in = data_input(name, p->dtype, {B, T, D}, seed, scale);
      in.view = TensorView(in.view.data, in.view.dtype, in.view.device, shape, {T * D, 1, D});
      return in;
    };
    p->inputs.clear();
    if (bwd) {
      p->inputs.push_back(btd("grad_y", cs.seed + 7, 1.0));
      p->inputs.push_back(sc["final_state"] != 0
                              ? data_input("grad_final_state", sd, sshape, cs.seed + 8, 1.0)
                              : data_input("grad_final_state", sd, {0}, cs.seed + 8, 1.0));
    }
    p->inputs.push_back(btd("x", cs.seed, cs.scale));
    const Shape wshape = lay == 1 ? Shape{W, D} : Shape{D, std::max<int64_t>(W, 0)};
    p->inputs.push_back(data_input("weight", p->dtype, wshape, cs.seed + 1, 0.5));
    if (sc["bias"] != 0) p->inputs.push_back(data_input("bias", p->dtype, {D}, cs.seed + 2, 0.5));
    if (sc["initial_state"] != 0)
      p->inputs.push_back(data_input("initial_state", sd, sshape, cs.seed + 3, 1.0));
    if (sc["seq_idx_every"] > 0) {
      const auto k = static_cast<int64_t>(sc["seq_idx_every"]);
      std::vector<int64_t> v;
      for (int64_t b = 0; b < B; ++b)
        for (int64_t t = 0; t < T; ++t) v.push_back(t / k);
      p->inputs.push_back(int_input("seq_idx", DType::int32, v, {B, T}));
    }
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    if (sc["residual"] != 0) p->inputs.push_back(btd("residual", cs.seed + 4, 1.0));
    p->sizes = {{"B", B}, {"D", D}, {"T", T}, {"W", W}, {"N", N}};
    if (!bwd) {
      p->outputs = {{"y", shape, p->dtype}};
      if (sc["final_state"] != 0) p->outputs.push_back({"final_state", sshape, sd});
      return Status::Ok();
    }
    p->outputs = {{"dx", shape, p->dtype}, {"dweight", wshape, p->dtype}};
    if (sc["bias"] != 0 && sc["want_dbias"] != 0) p->outputs.push_back({"dbias", {D}, p->dtype});
    if (sc["initial_state"] != 0 && sc["want_dinitial_state"] != 0)
      p->outputs.push_back({"dinitial_state", sshape, sd});
    if (sc["residual"] != 0 && sc["want_dresidual"] != 0)
      p->outputs.push_back({"dresidual", shape, p->dtype});
    return Status::Ok();
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.op != "causal_conv1d_bwd") return 0;
    CausalConv1dBwdArgs a;
    fill(p, in, &a);
    return causal_conv1d_bwd_workspace_bytes(a);
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "causal_conv1d_bwd") {
      CausalConv1dBwdArgs a;
      fill(p, in, &a);
      size_t i = 2;
      const TensorView* db = a.bias && a.want_dbias ? &out[i++] : nullptr;
      const TensorView* di = a.initial_state && a.want_dinitial_state ? &out[i++] : nullptr;
      const TensorView* dr = a.residual && a.want_dresidual ? &out[i++] : nullptr;
      return causal_conv1d_bwd(a, out[0], out[1], db, di, dr, ctx);
    }
    CausalConv1dArgs a;
    fill(p, in, &a);
    return causal_conv1d(a, out[0], a.output_final_state ? &out[1] : nullptr, ctx);
  }

  // The fp64 golden (the reference); no workspace on the CPU.
  Status golden(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    Context ctx;
    ctx.impl = "reference";
    return run(p, views(p.inputs), views(*out), ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  // The arguments from the inputs (in make's order) and the scalars.
  template <class A>
  static void fill(const Problem& p, const std::vector<TensorView>& in, A* a) {
    const auto& sc = p.scalars;
    size_t i = 0;
    if constexpr (std::is_same_v<A, CausalConv1dBwdArgs>) {
      a->grad_y = in[i++];
      a->grad_final_state = in[i++];
      a->want_dbias = sc.at("want_dbias") != 0;
      a->want_dinitial_state = sc.at("want_dinitial_state") != 0;
      a->want_dresidual = sc.at("want_dresidual") != 0;
    }
    a->x = in[i++];
    a->weight = in[i++];
    if (sc.at("bias") != 0) a->bias = in[i++];
    if (sc.at("initial_state") != 0) a->initial_state = in[i++];
    if (sc.at("seq_idx_every") > 0) a->seq_idx = in[i++];
    if (sc.at("packed") != 0) a->seq_offsets = in[i++];
    if (sc.at("residual") != 0) a->residual = in[i++];
    a->output_final_state = sc.at("final_state") != 0;
    a->activation = static_cast<ConvActivation>(static_cast<int>(sc.at("activation")));
    a->weight_layout = static_cast<ConvWeightLayout>(static_cast<int>(sc.at("weight_layout")));
    a->state_len = static_cast<int64_t>(sc.at("state_len"));
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(CausalConv1dDriver);

}  // namespace recops::cli
