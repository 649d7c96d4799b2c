// training/chunk_kda_bwd_intra/driver.cpp: the `recops` CLI's driver of chunk_kda_bwd_intra:
// builds a case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h),
// and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: gva (HV / H, default
// 1), chunk_size (default 64), gate_scale (default 1: per-position, per-channel log decays
// −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units), T (with lengths/offsets: q's T instead of
// the offsets' total, for a mismatch case). q, k = U(−1, 1) with rows l2-normalised (fla's
// conditioning) and beta = sigmoid(U(−1, 1)), in the case's dtype; G (fp32, [B, T, HV, K]) is
// recops' chunk_local_cumsum of the decays, chunks restarting at each sequence start; dAqk, dAkk
// (fp32, all BT columns: the parts the op must not read hold data too) and the incoming dq, dk,
// dbeta, dg (fp32) = U(−1, 1).
#include <vector>

#include "ops/training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::number;

class ChunkKdaBwdIntraDriver final : public training_args::GdnDriver {
 public:
  ChunkKdaBwdIntraDriver() : GdnDriver("chunk_kda_bwd_intra", {}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    (void)gates;  // KDA always has its per-channel gate
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    sc["packed"] = packed;
    p->inputs.clear();
    const bool fl = is_floating(p->dtype);  // false in a refusal case of an integer q
    const DType f32 = DType::fp32;
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    if (fl) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    if (fl) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("g", f32, {B, T, HV, K}, cs.seed + 2, 1.0));
    TensorView& g = p->inputs.back().view;
    training_args::gate_decays(&g, number(cs, "gate_scale", 1.0));
    training_args::chunk_cumsum(&g, packed ? &off.view : nullptr, bt,
                                training_args::gate_unit(log2));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 3, 1.0));
    if (fl) training_args::sigmoid(&p->inputs.back().view);
    p->inputs.push_back(data_input("dAqk", f32, {B, T, HV, bt}, cs.seed + 4, 1.0));
    p->inputs.push_back(data_input("dAkk", f32, {B, T, HV, bt}, cs.seed + 5, 1.0));
    p->inputs.push_back(data_input("dq", f32, shape, cs.seed + 6, 1.0));
    p->inputs.push_back(data_input("dk", f32, shape, cs.seed + 7, 1.0));
    p->inputs.push_back(data_input("dbeta", f32, {B, T, HV}, cs.seed + 8, 1.0));
    p->inputs.push_back(data_input("dg", f32, {B, T, HV, K}, cs.seed + 9, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"dq_out", shape, f32},
                  {"dk_out", shape, f32},
                  {"dbeta_out", {B, T, HV}, f32},
                  {"dg_out", {B, T, HV, K}, f32}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_kda_bwd_intra(args(p, in), {out[0], out[1], out[2], out[3]}, ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return chunk_kda_bwd_intra_plain(args(p, views(p.inputs)), {o[0], o[1], o[2], o[3]});
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does per position and value head: dAqk·(k⊙γ), dAkk·(k⊙γ),
  // dAqkᵀ·(q⊙γ), dAkkᵀ·(βk⊙γ) (2·BT·K each): 8·B·T·HV·BT·K.
  double flops(const Problem& p) const override {
    auto get = [&](const char* n) { return training_args::size_named(p, n); };
    return 8.0 * get("B") * get("T") * get("HV") * get("BT") * get("K");
  }

 private:
  static ChunkKdaBwdIntraArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkKdaBwdIntraArgs a;
    a.q = in[0];
    a.k = in[1];
    a.g = in[2];
    a.beta = in[3];
    a.dAqk = in[4];
    a.dAkk = in[5];
    a.dq = in[6];
    a.dk = in[7];
    a.dbeta = in[8];
    a.dg = in[9];
    if (sc.at("packed") != 0) a.seq_offsets = in[10];
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkKdaBwdIntraDriver);

}  // namespace recops::cli
