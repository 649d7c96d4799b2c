// training/common/gdn_composed_driver.h: the `recops` CLI's driver that the composed ops
// chunk_gated_delta_rule (g [B, T, HV]) and chunk_kda (g [B, T, HV, K], per channel) share: builds
// a case's inputs, calls the public entry with its workspace, counts bytes and FLOPs
// (tools/recops/driver.h), and supplies the double standard's plain baseline. Each op's driver.cpp
// documents the case fields and supplies a traits struct Op: Args, BwdArgs, BwdOut; kOp, kBwd,
// kFolder; kGatePerChannel; forward, forward_workspace_bytes, forward_plain, backward,
// backward_workspace_bytes, backward_plain (the op's C++ API).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ops/training/common/case_args.h"
#include "tools/recops/inputs.h"

namespace recops::cli::training_args {

template <class Op>
class ComposedDriver : public WorkspaceDriver {
 public:
  ComposedDriver()
      : WorkspaceDriver({.ops = {Op::kOp, Op::kBwd},
                         .folder = Op::kFolder,
                         .fields = {"shape", "lengths", "offsets", "offsets_dtype"},
                         .dtype = DType::bf16,
                         .args = {{"V", ArgKind::integer},
                                  {"chunk_size", ArgKind::integer},
                                  {"gva", ArgKind::integer},
                                  {"gate_scale", ArgKind::number},
                                  {"half_zero_gates", ArgKind::boolean},
                                  {"gate_dtype", ArgKind::text},
                                  {"l2norm", ArgKind::boolean},
                                  {"scale", ArgKind::number},
                                  {"initial_state", ArgKind::boolean},
                                  {"final_state", ArgKind::boolean},
                                  {"T", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "q's [B, T, H, K]"));
    Shape shape = *cs.shape;
    if (shape.size() != 4) return case_error(row, "shape must be q's [B, T, H, K]");
    bool packed = false;
    Input off;
    RECOPS_RETURN_IF_ERROR(training_args::packed_time(row, p, &shape, &off, &packed));
    const int64_t B = shape[0], T = shape[1], H = shape[2], K = shape[3];
    const int64_t HV = H * static_cast<int64_t>(number(cs, "gva", 1));
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    const int64_t N = packed ? static_cast<int64_t>(p->offsets.size()) - 1 : B;
    const bool l2 = flag(cs, "l2norm", false);
    const bool h0 = flag(cs, "initial_state", true), ht = flag(cs, "final_state", true);
    const int gate_same = training_args::choice(cs, "gate_dtype", {"fp32", "same"});
    if (gate_same > 1) return case_error(row, "gate_dtype must be fp32 or same");
    auto& sc = p->scalars;
    sc["chunk_size"] = number(cs, "chunk_size", 64);
    sc["output_final_state"] = ht;
    sc["use_qk_l2norm_in_kernel"] = l2;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["h0"] = h0;
    sc["packed"] = packed;
    const bool bwd = row.op == Op::kBwd;
    sc["bwd"] = bwd;
    p->inputs.clear();
    if (bwd) {
      p->inputs.push_back(data_input("grad_o", p->dtype, {B, T, HV, V}, cs.seed + 6, 1.0));
      if (ht)
        p->inputs.push_back(data_input("grad_final_state", DType::fp32,
                                       {std::max<int64_t>(N, 0), HV, K, V}, cs.seed + 7, 1.0));
    }
    const size_t q_at = p->inputs.size();
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, l2 ? 2.0 : 1.0));
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, l2 ? 2.0 : 1.0));
    if (!l2) {
      normalize_rows(&p->inputs[q_at]);
      normalize_rows(&p->inputs[q_at + 1]);
    }
    p->inputs.push_back(data_input("v", p->dtype, {B, T, HV, V}, cs.seed + 2, 1.0));
    const double gs = number(cs, "gate_scale", 1.0);
    const Shape gate = Op::kGatePerChannel ? Shape{B, T, HV, K} : Shape{B, T, HV};
    p->inputs.push_back(
        data_input("g", gate_same ? p->dtype : DType::fp32, gate, cs.seed + 3, 1.0));
    map_values(&p->inputs.back(), [gs](double x) { return -std::log1p(std::exp(-x)) * gs; });
    if (flag(cs, "half_zero_gates", false)) zero_every_other(&p->inputs.back());
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 4, 1.0));
    map_values(&p->inputs.back(), [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    if (h0)
      p->inputs.push_back(data_input("initial_state", DType::fp32,
                                     {std::max<int64_t>(N, 0), HV, K, V}, cs.seed + 5, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}};
    if (packed) p->sizes.push_back({"N", N});
    if (bwd) {
      p->outputs = {{"dq", shape, p->dtype},
                    {"dk", shape, p->dtype},
                    {"dv", {B, T, HV, V}, p->dtype},
                    {"dg", gate, gate_same ? p->dtype : DType::fp32},
                    {"dbeta", {B, T, HV}, p->dtype}};
      if (h0) p->outputs.push_back({"dh0", {std::max<int64_t>(N, 0), HV, K, V}, DType::fp32});
      return Status::Ok();
    }
    p->outputs = {{"o", {B, T, HV, V}, p->dtype}};
    if (ht) p->outputs.push_back({"final_state", {std::max<int64_t>(N, 0), HV, K, V}, DType::fp32});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.scalars.at("bwd") != 0) {
      const BwdArgs b = bwd_args(p, in);
      return Op::backward(b, bwd_out(out, b), ctx);
    }
    const Args a = args(p, in);
    return Op::forward(a, out[0], a.output_final_state ? &out[1] : nullptr, ctx);
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.scalars.at("bwd") != 0) return Op::backward_workspace_bytes(bwd_args(p, in));
    return Op::forward_workspace_bytes(args(p, in));
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    if (p.scalars.at("bwd") != 0) {
      const BwdArgs b = bwd_args(p, views(p.inputs));
      return Op::backward_plain(b, bwd_out(o, b));
    }
    const Args a = args(p, views(p.inputs));
    return Op::forward_plain(a, o[0], a.output_final_state ? &o[1] : nullptr);
  }

  // The dense chunk matmuls a GPU does, per position and value head (BT the chunk size): GDN's kkᵀ
  // 2·BT·K (KDA's Akk and Aqk 4·BT·K), w and u 2·BT·(K + V), w·S and the k ⊗ v_new update 4·K·V,
  // q·kᵀ 2·BT·K (KDA: in Aqk), o 2·BT·V and q·h 2·K·V: 2·B·T·HV·(3·BT·K + 2·BT·V + 3·K·V).
  // The backward: the forward's recompute (without o) plus about twice its matmuls; counted as
  // three times the forward's.
  double flops(const Problem& p) const override {
    const size_t at =
        p.scalars.at("bwd") != 0 ? (p.scalars.at("output_final_state") != 0 ? 2 : 1) : 0;
    const Shape& q = p.inputs[at].view.shape();
    const Shape& v = p.inputs[at + 2].view.shape();
    const double bt = p.scalars.at("chunk_size"), K = static_cast<double>(q[3]);
    const double V = static_cast<double>(v[3]);
    return (at ? 3.0 : 1.0) * 2.0 * static_cast<double>(v[0] * v[1] * v[2]) *
           (3.0 * bt * K + 2.0 * bt * V + 3.0 * K * V);
  }

 private:
  using Args = typename Op::Args;
  using BwdArgs = typename Op::BwdArgs;
  using BwdOut = typename Op::BwdOut;

  static Args args(const Problem& p, const std::vector<TensorView>& in, size_t i = 0) {
    const auto& sc = p.scalars;
    Args a;
    a.q = in[i];
    a.k = in[i + 1];
    a.v = in[i + 2];
    a.g = in[i + 3];
    a.beta = in[i + 4];
    i += 5;
    if (sc.at("h0") != 0) a.initial_state = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.output_final_state = sc.at("output_final_state") != 0;
    a.use_qk_l2norm_in_kernel = sc.at("use_qk_l2norm_in_kernel") != 0;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    return a;
  }

  static BwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    BwdArgs b;
    b.grad_o = in[0];
    const bool ht = p.scalars.at("output_final_state") != 0;
    if (ht) b.grad_final_state = in[1];
    const Args a = args(p, in, ht ? 2 : 1);
    b.q = a.q, b.k = a.k, b.v = a.v, b.g = a.g, b.beta = a.beta, b.scale = a.scale;
    b.initial_state = a.initial_state;
    b.output_final_state = a.output_final_state;
    b.seq_offsets = a.seq_offsets;
    b.use_qk_l2norm_in_kernel = a.use_qk_l2norm_in_kernel;
    b.chunk_size = a.chunk_size;
    return b;
  }

  static BwdOut bwd_out(const std::vector<TensorView>& o, const BwdArgs& b) {
    return {o[0], o[1], o[2], o[3], o[4], b.initial_state ? &o[5] : nullptr};
  }

  // Each element x of a floating input replaced by f(x), rounded to its dtype.
  template <class F>
  static void map_values(Input* in, F f) {
    TensorView& v = in->view;
    visit_floating(v.dtype, [&](auto t) {
      using X = decltype(t);
      X* d = static_cast<X*>(v.data);
      for (int64_t i = 0; i < v.numel(); ++i) d[i] = from_double<X>(f(to_double(d[i])));
    });
  }

  // Elements 0, 2, 4, ... of a floating input set to 0.
  static void zero_every_other(Input* in) {
    TensorView& v = in->view;
    visit_floating(v.dtype, [&](auto t) {
      using X = decltype(t);
      X* d = static_cast<X*>(v.data);
      for (int64_t i = 0; i < v.numel(); i += 2) d[i] = from_double<X>(0.0);
    });
  }

  // The rows (last dim) scaled to unit l2 norm in fp64, rounded to the dtype.
  static void normalize_rows(Input* in) {
    TensorView& v = in->view;
    const int64_t K = v.sizes[3], rows = K ? v.numel() / K : 0;
    visit_floating(v.dtype, [&](auto t) {
      using X = decltype(t);
      X* d = static_cast<X*>(v.data);
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t c = 0; c < K; ++c) ss += to_double(d[r * K + c]) * to_double(d[r * K + c]);
        const double inv = 1.0 / std::sqrt(std::max(ss, 1e-30));
        for (int64_t c = 0; c < K; ++c)
          d[r * K + c] = from_double<X>(to_double(d[r * K + c]) * inv);
      }
    });
  }
};

}  // namespace recops::cli::training_args
