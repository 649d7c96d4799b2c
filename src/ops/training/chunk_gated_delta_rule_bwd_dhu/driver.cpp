// training/chunk_gated_delta_rule_bwd_dhu/driver.cpp: the `recops` CLI's driver of
// chunk_gated_delta_rule_bwd_dhu: builds a case's inputs, calls the public entry, counts bytes and
// FLOPs (tools/recops/driver.h), and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (do's width, default
// 64), chunk_size (default 64), gva (HV / H, default 1), gates (default true: pass G), gate_scale
// (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units), scale
// (the op's scale; absent: the op's default K^-1/2), h0 (default true: pass h0, dh0 returned),
// dht (default true: pass dht), w_scale (default 1), fp32_chunk_states, T (with lengths/offsets:
// q's T instead of the offsets' total, for a mismatch case), gk (default false: pass KDA's
// per-channel gate gk [B, T, HV, K]), gk_scale (default 1: its per-channel log decays
// −|U(−1, 1)|·gk_scale), gk_width (gk's last dim instead of K, for a refusal case).
// q, k, do, dv_local ~ U(−1, 1) in the case's dtype; w ~ U(−1, 1)·w_scale/(K·√BT) in the case's
// dtype, which keeps the backward recurrence's per-chunk map I − Σ_t k_t w_tᵀ near the identity
// (fla's real w = Ai·(β·exp(G)·k) keeps it a contraction; U(−1, 1) w would grow dS by a large
// factor per chunk); h0, dht ~ U(−1, 1) fp32. G is the chunk-local inclusive cumsum of the decays,
// fp32, restarting at each chunk and sequence start (times 1/ln 2 with gate_log2); gk likewise per
// channel, by recops' chunk_local_cumsum (the KDA drivers' way).
#include <cmath>

#include "ops/training/chunk_gated_delta_rule_bwd_dhu/chunk_gated_delta_rule_bwd_dhu.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkGatedDeltaRuleBwdDhuDriver final : public training_args::GdnDriver {
 public:
  ChunkGatedDeltaRuleBwdDhuDriver()
      : GdnDriver("chunk_gated_delta_rule_bwd_dhu", {{"V", ArgKind::integer},
                                                     {"scale", ArgKind::number},
                                                     {"h0", ArgKind::boolean},
                                                     {"dht", ArgKind::boolean},
                                                     {"w_scale", ArgKind::number},
                                                     {"fp32_chunk_states", ArgKind::boolean},
                                                     {"gk", ArgKind::boolean},
                                                     {"gk_scale", ArgKind::number},
                                                     {"gk_width", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    const int64_t N = packed ? static_cast<int64_t>(p->offsets.size()) - 1 : B;
    const bool h0 = flag(cs, "h0", true), dht = flag(cs, "dht", true);
    const bool f32 = flag(cs, "fp32_chunk_states", false);
    const bool gk = flag(cs, "gk", false);
    // dh's NT: ceil(T / BT), plus N with offsets (the sync-free bound).
    const int64_t nt = (bt > 0 ? (T + bt - 1) / bt : 0) + (packed ? N : 0);
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    sc["fp32_chunk_states"] = f32;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["gates"] = gates;
    sc["with_h0"] = h0;
    sc["with_dht"] = dht;
    sc["packed"] = packed;
    sc["with_gk"] = gk;  // not under "gk", the op's argument name (record replays the scalars)
    const double w_amp =
        number(cs, "w_scale", 1.0) / (static_cast<double>(std::max<int64_t>(K, 1)) *
                                      std::sqrt(static_cast<double>(std::max<int64_t>(bt, 1))));
    p->inputs.clear();
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("w", p->dtype, {B, T, HV, K}, cs.seed + 2, w_amp));
    p->inputs.push_back(data_input("do", p->dtype, {B, T, HV, V}, cs.seed + 3, 1.0));
    p->inputs.push_back(data_input("dv_local", p->dtype, {B, T, HV, V}, cs.seed + 4, 1.0));
    if (gates) {
      p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 5, 1.0));
      training_args::gate_cumsum_fp64(&p->inputs.back().view, p->offsets, packed, bt,
                                      number(cs, "gate_scale", 1.0),
                                      training_args::gate_unit(log2));
    }
    if (gk) {
      const int64_t width = static_cast<int64_t>(number(cs, "gk_width", static_cast<double>(K)));
      p->inputs.push_back(data_input("gk", DType::fp32, {B, T, HV, width}, cs.seed + 8, 1.0));
      TensorView& gkv = p->inputs.back().view;
      training_args::gate_decays(&gkv, number(cs, "gk_scale", 1.0));
      training_args::chunk_cumsum(&gkv, packed ? &off.view : nullptr, bt,
                                  training_args::gate_unit(log2));
    }
    if (h0) p->inputs.push_back(data_input("h0", DType::fp32, {N, HV, K, V}, cs.seed + 6, 1.0));
    if (dht) p->inputs.push_back(data_input("dht", DType::fp32, {N, HV, K, V}, cs.seed + 7, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", N});
    p->outputs = {{"dh", {B, nt, HV, K, V}, f32 ? DType::fp32 : p->dtype}};
    if (h0) p->outputs.push_back({"dh0", {N, HV, K, V}, DType::fp32});
    p->outputs.push_back({"dv2", {B, T, HV, V}, p->dtype});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const bool h0 = p.scalars.at("with_h0") != 0;
    return chunk_gated_delta_rule_bwd_dhu(args(p, in), out[0], h0 ? &out[1] : nullptr,
                                          out[h0 ? 2 : 1], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    const bool h0 = p.scalars.at("with_h0") != 0;
    return chunk_gated_delta_rule_bwd_dhu_plain(args(p, views(p.inputs)), o[0],
                                                h0 ? &o[1] : nullptr, o[h0 ? 2 : 1]);
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: 2·K·V each for k·dS,
  // q ⊗ do and w ⊗ dv2: 6·B·T·HV·K·V.
  double flops(const Problem& p) const override {
    const Shape& q = p.inputs[0].view.shape();
    const Shape& dv = p.inputs[4].view.shape();
    return 6.0 * static_cast<double>(dv[0] * dv[1] * dv[2]) * static_cast<double>(q[3] * dv[3]);
  }

 private:
  static ChunkGatedDeltaRuleBwdDhuArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkGatedDeltaRuleBwdDhuArgs a;
    a.q = in[0];
    a.k = in[1];
    a.w = in[2];
    a.do_ = in[3];
    a.dv_local = in[4];
    size_t i = 5;
    if (sc.at("gates") != 0) a.g = in[i++];
    if (const auto it = sc.find("with_gk"); it != sc.end() && it->second != 0) a.gk = in[i++];
    if (sc.at("with_h0") != 0) a.h0 = in[i++];
    if (sc.at("with_dht") != 0) a.dht = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    a.fp32_chunk_states = sc.at("fp32_chunk_states") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkGatedDeltaRuleBwdDhuDriver);

}  // namespace recops::cli
