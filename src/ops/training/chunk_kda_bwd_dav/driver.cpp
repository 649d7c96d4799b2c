// training/chunk_kda_bwd_dav/driver.cpp: the `recops` CLI's driver of chunk_kda_bwd_dav: builds a
// case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h), and
// supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (v_new's [B, T, HV, V], required; with
// lengths/offsets T is replaced by the offsets' total), lengths | offsets, offsets_dtype. args:
// chunk_size (default 64), scale (absent: the default 1), T (with lengths/offsets: the tensors' T
// instead of the offsets' total, for a mismatch case). v_new, do = U(−1, 1) and Aqk = U(−1, 1)·
// 0.2 over all BT columns (its upper part and the columns past a tail chunk hold data too: the op
// must not read them), all in the case's dtype.
#include <vector>

#include "ops/training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::number;

class ChunkKdaBwdDavDriver final : public training_args::GdnDriver {
 public:
  ChunkKdaBwdDavDriver() : GdnDriver("chunk_kda_bwd_dav", {{"scale", ArgKind::number}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "v_new", &c));
    // The anchor's [B, T, H, K] letters are v_new's [B, T, HV, V] here.
    auto& [shape, packed, off, B, T, HV, V, gva_hv, bt, gates, log2] = c;
    (void)gva_hv, (void)gates, (void)log2;
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("v_new", p->dtype, shape, cs.seed, 1.0));
    p->inputs.push_back(data_input("do", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("Aqk", p->dtype, {B, T, HV, bt}, cs.seed + 2, 0.2));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"HV", HV}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"dAqk", {B, T, HV, bt}, DType::fp32}, {"dv", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_kda_bwd_dav(args(p, in), {out[0], out[1]}, ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return chunk_kda_bwd_dav_plain(args(p, views(p.inputs)), {o[0], o[1]});
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The two dense chunk matmuls a GPU does per position and value head, do·v_newᵀ and Aqkᵀ·do
  // (2·BT·V each): 4·B·T·HV·BT·V.
  double flops(const Problem& p) const override {
    auto get = [&](const char* n) { return training_args::size_named(p, n); };
    return 4.0 * get("B") * get("T") * get("HV") * get("BT") * get("V");
  }

 private:
  static ChunkKdaBwdDavArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkKdaBwdDavArgs a;
    a.v_new = in[0];
    a.d_o = in[1];
    a.Aqk = in[2];
    if (sc.at("packed") != 0) a.seq_offsets = in[3];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkKdaBwdDavDriver);

}  // namespace recops::cli
