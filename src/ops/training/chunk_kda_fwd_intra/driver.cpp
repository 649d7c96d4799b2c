// training/chunk_kda_fwd_intra/driver.cpp: the `recops` CLI's driver of chunk_kda_fwd_intra:
// builds a case's inputs, calls the public entry, and supplies the double standard's plain
// baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype, scale (v's values,
// U(−1, 1)·scale). args: V (v's last dim, default K), gva (HV / H, default 1), chunk_size
// (default 64, always passed), gate_scale (default 1: per-channel log decays −|U(−1, 1)|·
// gate_scale), gate_log2 (G in log2 units), l2norm (default true: q's and k's rows
// l2-normalised, fla's conditioning), qk_scale (the op's scale; absent: the op's default K^-1/2),
// T (with lengths/offsets: q's T instead of the offsets' total, for a mismatch case).
// beta = sigmoid(U(−1, 1)) in q's dtype; G [B, T, HV, K] fp32 is recops' chunk_local_cumsum of
// the decays (the chunks restarting at each sequence start; ×1/ln 2 with gate_log2). Where that
// op refuses the case (refusal cases) G keeps the raw decays and the entry's refusal is what the
// case checks.
#include <cmath>

#include "ops/training/chunk_kda_fwd_intra/chunk_kda_fwd_intra.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkKdaFwdIntraDriver final : public training_args::GdnDriver {
 public:
  ChunkKdaFwdIntraDriver()
      : GdnDriver(
            "chunk_kda_fwd_intra",
            {{"V", ArgKind::integer}, {"l2norm", ArgKind::boolean}, {"qk_scale", ArgKind::number}},
            true) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", static_cast<double>(K)));
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("qk_scale")) sc["scale"] = number(cs, "qk_scale", 1.0);
    sc["packed"] = packed;
    const bool l2 = flag(cs, "l2norm", true);
    p->inputs.clear();
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    if (l2) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    if (l2) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("v", p->dtype, {B, T, HV, V}, cs.seed + 2, cs.scale));
    p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV, K}, cs.seed + 3, 1.0));
    TensorView& g = p->inputs.back().view;
    training_args::gate_decays(&g, number(cs, "gate_scale", 1.0));
    training_args::chunk_cumsum(&g, packed ? &off.view : nullptr, bt,
                                training_args::gate_unit(log2));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 4, 1.0));
    TensorView& beta = p->inputs.back().view;
    visit_floating(beta.dtype, [&](auto t) {
      using X = decltype(t);
      X* d = static_cast<X*>(beta.data);
      for (int64_t i = 0; i < beta.numel(); ++i)
        d[i] = from_double<X>(1.0 / (1.0 + std::exp(-to_double(d[i]))));
    });
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"w", {B, T, HV, K}, p->dtype},    {"u", {B, T, HV, V}, p->dtype},
                  {"qg", {B, T, HV, K}, p->dtype},   {"kg", {B, T, HV, K}, p->dtype},
                  {"Aqk", {B, T, HV, bt}, p->dtype}, {"Akk", {B, T, HV, bt}, DType::fp32}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_kda_fwd_intra(args(p, in), outs(out), ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    return chunk_kda_fwd_intra_plain(args(p, views(p.inputs)), outs(views(*out)));
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does: Aqk and M (2·BT·K each per row), w and u (2·BT·(K + V)
  // per row), per (row, value head).
  double flops(const Problem& p) const override {
    const Shape& v = p.inputs[2].view.shape();
    if (v.size() != 4) return -1;
    const double K = static_cast<double>(p.inputs[0].view.sizes[3]);
    const double BT = p.scalars.at("chunk_size");
    return 2.0 * static_cast<double>(v[0] * v[1] * v[2]) * BT * (3 * K + static_cast<double>(v[3]));
  }

 private:
  static ChunkKdaFwdIntraOut outs(const std::vector<TensorView>& o) {
    return {o[0], o[1], o[2], o[3], o[4], o[5]};
  }

  static ChunkKdaFwdIntraArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkKdaFwdIntraArgs a;
    a.q = in[0];
    a.k = in[1];
    a.v = in[2];
    a.g = in[3];
    a.beta = in[4];
    if (sc.at("packed") != 0) a.seq_offsets = in[5];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkKdaFwdIntraDriver);

}  // namespace recops::cli
