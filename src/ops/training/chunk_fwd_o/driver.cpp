// training/chunk_fwd_o/driver.cpp: the `recops` CLI's driver of chunk_fwd_o: builds a case's
// inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h), and supplies
// the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (v_new's width,
// default 64), chunk_size (default 64), gva (HV / H, default 1), gates (default true: pass G),
// gate_scale (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2
// units), scale (the op's scale; absent: the op's default K^-1/2), extra_chunks (h's NT this much
// over the chunk count: the sync-free bound with offsets, a refusal without), T (with
// lengths/offsets: q's T instead of the offsets' total, for a mismatch case), gk (default false:
// pass KDA's per-channel gate gk [B, T, HV, K] instead of g; g too only when the case also says
// `gates: true`, a refusal), gk_K (gk's last dim, default K: another value is a refusal case).
// q, k, v_new, h ~ U(−1, 1) in the case's dtype; G is the chunk-local cumsum of the decays
// computed by recops' own chunk_local_cumsum op (fp32, chunks restarting at each sequence start;
// scale 1/ln 2 with gate_log2); gk the same of per-channel decays [B, T, HV, K] (fp32).
#include <cmath>

#include "ops/training/chunk_fwd_o/chunk_fwd_o.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkFwdODriver final : public training_args::GdnDriver {
 public:
  ChunkFwdODriver()
      : GdnDriver("chunk_fwd_o", {{"V", ArgKind::integer},
                                  {"scale", ArgKind::number},
                                  {"extra_chunks", ArgKind::integer},
                                  {"gk", ArgKind::boolean},
                                  {"gk_K", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    // h's NT: ceil(T / BT) per batch row, or the chunk count of the packed sequences.
    const int64_t nt = training_args::chunk_count(p->offsets, packed, T, bt) +
                       static_cast<int64_t>(number(cs, "extra_chunks", 0));
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    // Not under the argument's name "gk": a flag, not the tensor (recops record replays scalars).
    const bool per_channel = flag(cs, "gk", false);
    const bool g_on = gates && (!per_channel || cs.args.count("gates"));
    sc["gates"] = g_on;
    sc["per_channel"] = per_channel;
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("v_new", p->dtype, {B, T, HV, V}, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("h", p->dtype, {B, nt, HV, K, V}, cs.seed + 3, 1.0));
    // G: the chunk-local cumsum of the decays, per position [B, T, HV] (g) or per channel
    // [B, T, HV, K'] (gk).
    // (Structured bindings are passed by init-capture: clang 14 cannot capture them.)
    auto gate = [&, offsets = packed ? &off.view : nullptr, chunk = bt,
                 unit = training_args::gate_unit(log2)](const char* name, Shape s, uint64_t seed) {
      p->inputs.push_back(data_input(name, DType::fp32, std::move(s), seed, 1.0));
      TensorView& g = p->inputs.back().view;
      training_args::gate_decays(&g, number(cs, "gate_scale", 1.0));
      training_args::chunk_cumsum(&g, offsets, chunk, unit);
    };
    if (g_on) gate("g", {B, T, HV}, cs.seed + 4);
    if (per_channel)
      gate("gk", {B, T, HV, static_cast<int64_t>(number(cs, "gk_K", static_cast<double>(K)))},
           cs.seed + 5);
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"o", {B, T, HV, V}, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_fwd_o(args(p, in), out[0], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return chunk_fwd_o_plain(args(p, views(p.inputs)), o[0]);
  }

  // Byte floor: q, k, v_new, h, G or gk (and seq_offsets) read once, o written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: 2·K·V (q·h), 2·BT·K (q·kᵀ)
  // and 2·BT·V (A·v): 2·B·T·HV·(K·V + BT·K + BT·V).
  double flops(const Problem& p) const override {
    const Shape& q = p.inputs[0].view.shape();
    const Shape& o = p.outputs[0].shape;
    const double K = static_cast<double>(q[3]), V = static_cast<double>(o[3]);
    const double bt = p.scalars.at("chunk_size");
    return 2.0 * static_cast<double>(o[0] * o[1] * o[2]) * (K * V + bt * K + bt * V);
  }

 private:
  static ChunkFwdOArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkFwdOArgs a;
    a.q = in[0];
    a.k = in[1];
    a.v_new = in[2];
    a.h = in[3];
    size_t i = 4;
    if (sc.at("gates") != 0) a.g = in[i++];
    if (sc.at("per_channel") != 0) a.gk = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkFwdODriver);

}  // namespace recops::cli
