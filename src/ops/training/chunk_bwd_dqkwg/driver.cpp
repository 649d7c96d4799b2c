// training/chunk_bwd_dqkwg/driver.cpp: the `recops` CLI's driver of chunk_bwd_dqkwg: builds a
// case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h), and
// supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (v_new's width,
// default 64), chunk_size (default 64), gva (HV / H, default 1), gates (default true: pass G;
// false: no dg), dw (default true: pass w and dv2; false: no dw), w_dtype (w's dtype name, default
// the case's: dw's dtype), gate_scale (default 1: per-position log decays −|U(−1, 1)|·gate_scale),
// gate_log2 (G in log2 units), scale (the op's scale; absent: the op's default K^-1/2),
// extra_chunks (h's and dh's NT this much over the chunk count: the sync-free bound with offsets,
// a refusal without), T (with lengths/offsets: q's T instead of the offsets' total).
// q, k, v_new, w, h, dh, do, dv2 ~ U(−1, 1) in the case's dtype; G is the chunk-local cumsum of
// the decays computed by recops' own chunk_local_cumsum op (fp32, chunks restarting at each
// sequence start; scale 1/ln 2 with gate_log2).
#include <cmath>
#include <cstring>

#include "ops/training/chunk_bwd_dqkwg/chunk_bwd_dqkwg.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkBwdDqkwgDriver final : public training_args::GdnDriver {
 public:
  ChunkBwdDqkwgDriver()
      : GdnDriver("chunk_bwd_dqkwg", {{"V", ArgKind::integer},
                                      {"dw", ArgKind::boolean},
                                      {"w_dtype", ArgKind::text},
                                      {"scale", ArgKind::number},
                                      {"extra_chunks", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    const bool with_dw = flag(cs, "dw", true);
    DType wt = p->dtype;
    if (const auto it = cs.args.find("w_dtype"); it != cs.args.end()) {
      const int c = training_args::choice(cs, "w_dtype", {"fp64", "fp32", "fp16", "bf16"});
      if (c > 3) return case_error(row, "w_dtype must be fp64, fp32, fp16 or bf16");
      const DType names[] = {DType::fp64, DType::fp32, DType::fp16, DType::bf16};
      wt = names[c];
    }
    // h's and dh's NT: ceil(T / BT) per batch row, or the chunk count of the packed sequences.
    const int64_t nt = training_args::chunk_count(p->offsets, packed, T, bt) +
                       static_cast<int64_t>(number(cs, "extra_chunks", 0));
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["gates"] = gates;
    sc["with_dw"] = with_dw;
    sc["packed"] = packed;
    p->inputs.clear();
    const Shape vs{B, T, HV, V}, hs{B, nt, HV, K, V};
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("v_new", p->dtype, vs, cs.seed + 2, 1.0));
    if (with_dw) p->inputs.push_back(data_input("w", wt, {B, T, HV, K}, cs.seed + 3, 1.0));
    if (gates) {
      p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 4, 1.0));
      TensorView& g = p->inputs.back().view;
      training_args::gate_decays(&g, number(cs, "gate_scale", 1.0));
      training_args::chunk_cumsum(&g, packed ? &off.view : nullptr, bt,
                                  training_args::gate_unit(log2));
    }
    p->inputs.push_back(data_input("h", p->dtype, hs, cs.seed + 5, 1.0));
    p->inputs.push_back(data_input("dh", p->dtype, hs, cs.seed + 6, 1.0));
    p->inputs.push_back(data_input("do", p->dtype, vs, cs.seed + 7, 1.0));
    if (with_dw) p->inputs.push_back(data_input("dv2", p->dtype, vs, cs.seed + 8, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"dq", shape, p->dtype}, {"dk", shape, p->dtype}};
    if (with_dw) p->outputs.push_back({"dw", {B, T, HV, K}, wt});
    if (gates) p->outputs.push_back({"dg", {B, T, HV}, DType::fp32});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const TensorView *dw = nullptr, *dg = nullptr;
    outs(p, out, &dw, &dg);
    return chunk_bwd_dqkwg(args(p, in), out[0], out[1], dw, dg, ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    const TensorView *dw = nullptr, *dg = nullptr;
    outs(p, o, &dw, &dg);
    return chunk_bwd_dqkwg_plain(args(p, views(p.inputs)), o[0], o[1], dw, dg);
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: 2·BT·V (do·vᵀ), 2·K·V
  // (h·do), 2·K·V (dh·v), 2·K·V (h·dv2, with dw), 2·BT·K twice (ds·k, dsᵀ·q):
  // 2·B·T·HV·(3·K·V (+K·V with dw) + BT·V + 2·BT·K).
  double flops(const Problem& p) const override {
    const auto& sz = p.sizes;
    auto get = [&](const char* n) {
      for (const auto& [name, v] : sz)
        if (name == n) return static_cast<double>(v);
      return 0.0;
    };
    const double B = get("B"), T = get("T"), HV = get("HV"), K = get("K"), V = get("V");
    const double bt = get("BT"), kv = p.scalars.at("with_dw") != 0 ? 4 : 3;
    return 2.0 * B * T * HV * (kv * K * V + bt * V + 2 * bt * K);
  }

 private:
  static void outs(const Problem& p, const std::vector<TensorView>& out, const TensorView** dw,
                   const TensorView** dg) {
    size_t i = 2;
    if (p.scalars.at("with_dw") != 0) *dw = &out[i++];
    if (p.scalars.at("gates") != 0) *dg = &out[i++];
  }

  static ChunkBwdDqkwgArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    const bool with_dw = sc.at("with_dw") != 0;
    ChunkBwdDqkwgArgs a;
    a.q = in[0];
    a.k = in[1];
    a.v_new = in[2];
    size_t i = 3;
    if (with_dw) a.w = in[i++];
    if (sc.at("gates") != 0) a.g = in[i++];
    a.h = in[i++];
    a.dh = in[i++];
    a.d_o = in[i++];
    if (with_dw) a.dv2 = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkBwdDqkwgDriver);

}  // namespace recops::cli
