// training/prepare_wy_repr_bwd/driver.cpp: the `recops` CLI's driver of prepare_wy_repr_bwd:
// builds a case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h),
// and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (k's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (v's last dim,
// default K), gva (HV / H, default 1), chunk_size (Ai's last dim BT, default 64; passed as the
// argument only when the case gives it, else None), gates (default true: pass G and get dG),
// gate_scale (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2
// units), T (with lengths/offsets: k's T instead of the offsets' total, for a mismatch case).
// k = U(−1, 1) with its rows l2-normalised (fla's conditioning), v, dw, du = U(−1, 1), beta =
// sigmoid(U(−1, 1)), all in the case's dtype; G (fp32) is recops' chunk_local_cumsum of the
// decays, the chunks restarting at each sequence start; Ai (fp32) is the GDN pipeline on these
// very inputs, recops' chunk_scaled_dot_kkt then solve_tril, so Ai = (I + A)^-1 of this k, beta,
// G. Where the pipeline refuses the inputs (refusal cases) G and Ai keep raw U(−1, 1) data and the
// entry's refusal is what the case checks.
#include <cmath>
#include <cstring>
#include <vector>

#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_driver.h"
#include "ops/training/prepare_wy_repr_bwd/prepare_wy_repr_bwd.h"
#include "ops/training/solve_tril/solve_tril.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::number;

class PrepareWyReprBwdDriver final : public training_args::GdnDriver {
 public:
  PrepareWyReprBwdDriver() : GdnDriver("prepare_wy_repr_bwd", {{"V", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "k", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", static_cast<double>(K)));
    auto& sc = p->scalars;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("chunk_size")) sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    sc["gates"] = gates;
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed, 1.0));
    training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("v", p->dtype, {B, T, HV, V}, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 2, 1.0));
    sigmoid(&p->inputs.back().view);
    if (gates) p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 3, 1.0));
    p->inputs.push_back(data_input("Ai", DType::fp32, {B, T, HV, bt}, cs.seed + 4, 1.0));
    p->inputs.push_back(data_input("dw", p->dtype, {B, T, HV, K}, cs.seed + 5, 1.0));
    p->inputs.push_back(data_input("du", p->dtype, {B, T, HV, V}, cs.seed + 6, 1.0));
    const Input* offs = packed ? &off : nullptr;
    TensorView* g = gates ? &p->inputs[3].view : nullptr;
    if (g) gate_cumsum(g, offs, bt, number(cs, "gate_scale", 1.0), log2);
    wy_inverse(p->inputs[0].view, p->inputs[2].view, g, offs, bt, log2,
               &p->inputs[gates ? 4 : 3].view);
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {
        {"dk", shape, p->dtype}, {"dv", {B, T, HV, V}, p->dtype}, {"dbeta", {B, T, HV}, p->dtype}};
    if (gates) p->outputs.push_back({"dg", {B, T, HV}, DType::fp32});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return prepare_wy_repr_bwd(args(p, in), out[0], out[1], out[2], dg_of(p, out), ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return prepare_wy_repr_bwd_plain(args(p, views(p.inputs)), o[0], o[1], o[2], dg_of(p, o));
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: Aiᵀdu, Aiᵀdw, du·(βv)ᵀ,
  // dw·(βek)ᵀ (2·BT·(K+V) each pair), the two BT×BT products of dA (4·BT²), k·kᵀ and the two
  // dA·k products (6·BT·K): 2·B·T·HV·(2·BT·(K + V) + 2·BT² + 3·BT·K).
  double flops(const Problem& p) const override {
    auto get = [&](const char* n) {
      for (const auto& [name, v] : p.sizes)
        if (name == n) return static_cast<double>(v);
      return 0.0;
    };
    const double B = get("B"), T = get("T"), HV = get("HV"), K = get("K"), V = get("V");
    const double bt = get("BT");
    return 2.0 * B * T * HV * (2 * bt * (K + V) + 2 * bt * bt + 3 * bt * K);
  }

 private:
  static const TensorView* dg_of(const Problem& p, const std::vector<TensorView>& out) {
    return p.scalars.at("gates") != 0 ? &out[3] : nullptr;
  }

  static PrepareWyReprBwdArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    PrepareWyReprBwdArgs a;
    size_t i = 0;
    a.k = in[i++];
    a.v = in[i++];
    a.beta = in[i++];
    if (sc.at("gates") != 0) a.g = in[i++];
    a.Ai = in[i++];
    a.dw = in[i++];
    a.du = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("chunk_size"); it != sc.end())
      a.chunk_size = static_cast<int64_t>(it->second);
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }

  // x ← sigmoid(x), rounded to x's dtype.
  static void sigmoid(TensorView* x) {
    visit_floating(x->dtype, [&](auto tag) {
      using X = decltype(tag);
      X* d = static_cast<X*>(x->data);
      for (int64_t i = 0; i < x->numel(); ++i)
        d[i] = from_double<X>(1.0 / (1.0 + std::exp(-to_double(d[i]))));
    });
  }

  // g (fp32 U(−1, 1)) → G, the chunk-local cumsum of the decays −|g|·gate_scale by recops'
  // chunk_local_cumsum (gdn_driver.h; scale 1/ln 2 for log2 units); left raw where that op
  // refuses the case.
  static void gate_cumsum(TensorView* g, const Input* off, int64_t bt, double gate_scale,
                          bool log2) {
    float* d = static_cast<float*>(g->data);
    const std::vector<float> raw(d, d + g->numel());
    training_args::gate_decays(g, gate_scale);
    if (!training_args::chunk_cumsum(g, off ? &off->view : nullptr, bt,
                                     training_args::gate_unit(log2)))
      std::memcpy(d, raw.data(), raw.size() * sizeof(float));
  }

  // *ai ← solve_tril(chunk_scaled_dot_kkt(k, beta, G)) (fp32); left raw where either refuses.
  static void wy_inverse(const TensorView& k, const TensorView& beta, const TensorView* g,
                         const Input* off, int64_t bt, bool log2, TensorView* ai) {
    ChunkScaledDotKktArgs ka;
    ka.k = k;
    ka.beta = beta;
    if (g) ka.g = *g;
    if (off) ka.seq_offsets = off->view;
    ka.chunk_size = bt;
    ka.gate_log2 = log2;
    Tensor A = Tensor::empty(ai->shape(), DType::fp32);
    if (!chunk_scaled_dot_kkt(ka, A.view()).ok()) return;
    SolveTrilArgs sa;
    sa.A = A.view();
    if (off) sa.seq_offsets = off->view;
    (void)solve_tril(sa, *ai);
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(PrepareWyReprBwdDriver);

}  // namespace recops::cli
