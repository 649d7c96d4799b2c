// training/chunk_bwd_dv_local/driver.cpp: the `recops` CLI's driver of chunk_bwd_dv_local: builds
// a case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h), and
// supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (do's width, default
// 64), chunk_size (default 64), gva (HV / H, default 1), gates (default true: pass G), gate_scale
// (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units), scale
// (the op's scale; absent: the op's default K^-1/2), T (with lengths/offsets: q's T instead of the
// offsets' total, for a mismatch case).
// q, k, do ~ U(−1, 1) in the case's dtype; G [B, T, HV] fp32 is the chunk-local cumsum of the
// decays as recops' own chunk_local_cumsum op computes it (chunks restarting at each sequence
// start; scale 1/ln 2 with gate_log2).
#include <algorithm>
#include <cmath>

#include "ops/training/chunk_bwd_dv_local/chunk_bwd_dv_local.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkBwdDvLocalDriver final : public training_args::GdnDriver {
 public:
  ChunkBwdDvLocalDriver()
      : GdnDriver("chunk_bwd_dv_local", {{"V", ArgKind::integer}, {"scale", ArgKind::number}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    // Under the argument's name only when the case gives it (recops record replays the scalars
    // named like an argument; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["gates"] = gates;
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    if (gates) {
      p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 2, 1.0));
      TensorView& g = p->inputs.back().view;
      // The decays −|x|·gate_scale with the product in fp32.
      float* x = static_cast<float*>(g.data);
      const auto gs = static_cast<float>(number(cs, "gate_scale", 1.0));
      for (int64_t i = 0; i < g.numel(); ++i) x[i] = -std::fabs(x[i]) * gs;
      training_args::chunk_cumsum(&g, packed ? &off.view : nullptr, bt,
                                  training_args::gate_unit(log2));
    }
    p->inputs.push_back(data_input("do", p->dtype, {B, T, HV, V}, cs.seed + 3, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"dv_local", {B, T, HV, V}, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_bwd_dv_local(args(p, in), out[0], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto dv = views(*out);
    return chunk_bwd_dv_local_plain(args(p, views(p.inputs)), dv[0]);
  }

  // Byte floor: q, k, G, do (and seq_offsets) read once, dv written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: 2·BT·K (k·qᵀ) and 2·BT·V
  // (A·do): 2·B·T·HV·BT·(K + V).
  double flops(const Problem& p) const override {
    const Shape& q = p.inputs[0].view.shape();
    const Shape& dv = p.outputs[0].shape;
    const double K = static_cast<double>(q[3]), V = static_cast<double>(dv[3]);
    const double bt = p.scalars.at("chunk_size");
    return 2.0 * static_cast<double>(dv[0] * dv[1] * dv[2]) * bt * (K + V);
  }

 private:
  static ChunkBwdDvLocalArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkBwdDvLocalArgs a;
    size_t i = 0;
    a.q = in[i++];
    a.k = in[i++];
    if (sc.at("gates") != 0) a.g = in[i++];
    a.do_ = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkBwdDvLocalDriver);

}  // namespace recops::cli
