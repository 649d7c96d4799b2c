// training/chunk_gated_delta_rule_fwd_h/driver.cpp: the `recops` CLI's driver of
// chunk_gated_delta_rule_fwd_h: builds a case's inputs, calls the public entry, counts bytes and
// FLOPs (tools/recops/driver.h), and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (k's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (u's width, default
// 64), chunk_size (default 64), gva (HV / H, default 1), gates (default true: pass G), gate_scale
// (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units),
// initial_state (default true: h0 ~ U(−1, 1) fp32), final_state (default true:
// output_final_state), fp32_chunk_states, num_chunks (passed only when given), T (with
// lengths/offsets: k's T instead of the offsets' total, for a mismatch case), gk (default false:
// also pass KDA's per-channel gate cumsum gk [B, T, HV, K]), gk_width (gk's last dim instead of K,
// for a refusal case).
// The inputs follow fla's conditioning and the GDN pipeline, so that the state stays bounded over
// many chunks: k's rows l2-normalised, v ~ U(−1, 1), beta = sigmoid(U(−1, 1)), all in the case's
// dtype; G is recops' chunk_local_cumsum of the decays (fp32, chunks restarting at each sequence
// start; scale 1/ln 2 with gate_log2); then w and u = recompute_w_u_fwd(k, v, beta,
// solve_tril(chunk_scaled_dot_kkt(k, beta, G)), G), by recops' own ops, in the case's dtype.
// Where that pipeline refuses the case (refusal cases) w and u keep raw U(−1, 1) data.
// With gk: gk is recops' chunk_local_cumsum of per-channel decays −|U(−1, 1)|·gate_scale (fp32,
// ×1/ln 2 with gate_log2), and k is then passed gated as KDA passes kg: k ⊙ exp(gk_L − gk) (L the
// chunk's last position; gk of value head h·HV/H for key head h), rounded once to the dtype.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/training/chunk_gated_delta_rule_fwd_h/chunk_gated_delta_rule_fwd_h.h"
#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_driver.h"
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/solve_tril/solve_tril.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkGatedDeltaRuleFwdHDriver final : public training_args::GdnDriver {
 public:
  ChunkGatedDeltaRuleFwdHDriver()
      : GdnDriver("chunk_gated_delta_rule_fwd_h", {{"V", ArgKind::integer},
                                                   {"initial_state", ArgKind::boolean},
                                                   {"final_state", ArgKind::boolean},
                                                   {"fp32_chunk_states", ArgKind::boolean},
                                                   {"num_chunks", ArgKind::integer},
                                                   {"gk", ArgKind::boolean},
                                                   {"gk_width", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "k", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    const int64_t N = packed ? static_cast<int64_t>(p->offsets.size()) - 1 : B;
    const bool h0 = flag(cs, "initial_state", true), ht = flag(cs, "final_state", true);
    const bool f32 = flag(cs, "fp32_chunk_states", false);
    // h's NT: ceil(T / BT), or with offsets num_chunks / the sync-free bound ceil(T / BT) + N.
    int64_t nt = bt > 0 ? (T + bt - 1) / bt : 0;
    if (packed) nt += N;
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    sc["output_final_state"] = ht;
    sc["fp32_chunk_states"] = f32;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("num_chunks")) {
      sc["num_chunks"] = number(cs, "num_chunks", 0);
      nt = static_cast<int64_t>(sc["num_chunks"]);
    }
    sc["gates"] = gates;
    const bool per_channel = flag(cs, "gk", false);
    sc["per_channel_gate"] = per_channel;
    sc["h0"] = h0;
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed, 1.0));
    training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("w", p->dtype, {B, T, HV, K}, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("u", p->dtype, {B, T, HV, V}, cs.seed + 2, 1.0));
    Input g = data_input("g", DType::fp32, {B, T, HV}, cs.seed + 3, 1.0);
    const double gs = number(cs, "gate_scale", 1.0);
    training_args::gate_decays(&g.view, gs);
    training_args::chunk_cumsum(&g.view, packed ? &off.view : nullptr, bt,
                                training_args::gate_unit(log2));
    wy(p->inputs, cs.seed + 4, gates ? &g.view : nullptr, packed ? &off.view : nullptr, bt, log2);
    if (gates) p->inputs.push_back(std::move(g));
    if (per_channel) {
      const int64_t width = static_cast<int64_t>(number(cs, "gk_width", static_cast<double>(K)));
      Input gk = data_input("gk", DType::fp32, {B, T, HV, width}, cs.seed + 7, 1.0);
      training_args::gate_decays(&gk.view, gs);
      const bool cut = training_args::chunk_cumsum(&gk.view, packed ? &off.view : nullptr, bt,
                                                   training_args::gate_unit(log2));
      if (cut && width == K && bt > 0)
        gate_keys(&p->inputs[0].view, gk.view, p->offsets, packed, bt, HV, log2);
      p->inputs.push_back(std::move(gk));
    }
    if (h0)
      p->inputs.push_back(data_input("initial_state", DType::fp32,
                                     {std::max<int64_t>(N, 0), HV, K, V}, cs.seed + 6, 1.0));
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", N});
    p->outputs = {{"h", {B, nt, HV, K, V}, f32 ? DType::fp32 : p->dtype},
                  {"v_new", {B, T, HV, V}, p->dtype}};
    if (ht) p->outputs.push_back({"final_state", {std::max<int64_t>(N, 0), HV, K, V}, DType::fp32});
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const ChunkGatedDeltaRuleFwdHArgs a = args(p, in);
    return chunk_gated_delta_rule_fwd_h(a, out[0], out[1], a.output_final_state ? &out[2] : nullptr,
                                        ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    const ChunkGatedDeltaRuleFwdHArgs a = args(p, views(p.inputs));
    return chunk_gated_delta_rule_fwd_h_plain(a, o[0], o[1],
                                              a.output_final_state ? &o[2] : nullptr);
  }

  // Byte floor: k, w, u, G, h0 (and seq_offsets) read once, h, v_new and final_state written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: 2·K·V for w·S and 2·K·V for
  // the k ⊗ v_new update: 4·B·T·HV·K·V.
  double flops(const Problem& p) const override {
    const Shape& k = p.inputs[0].view.shape();
    const Shape& v = p.outputs[1].shape;
    return 4.0 * static_cast<double>(v[0] * v[1] * v[2]) * static_cast<double>(k[3] * v[3]);
  }

 private:
  static ChunkGatedDeltaRuleFwdHArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkGatedDeltaRuleFwdHArgs a;
    a.k = in[0];
    a.w = in[1];
    a.u = in[2];
    size_t i = 3;
    if (sc.at("gates") != 0) a.g = in[i++];
    if (sc.at("per_channel_gate") != 0) a.gk = in[i++];
    if (sc.at("h0") != 0) a.initial_state = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    a.output_final_state = sc.at("output_final_state") != 0;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
    a.gate_log2 = sc.at("gate_log2") != 0;
    a.fp32_chunk_states = sc.at("fp32_chunk_states") != 0;
    if (const auto it = sc.find("num_chunks"); it != sc.end())
      a.num_chunks = static_cast<int64_t>(it->second);
    return a;
  }

  // k [B, T, H, K] in place → k ⊙ exp(gk_L − gk) per channel, KDA's kg (gk fp32 [B, T, HV, K] of
  // value head h·(HV/H); L the last position of the chunk of bt holding t, chunks cut from each
  // sequence's start), in fp64 and rounded once.
  static void gate_keys(TensorView* k, const TensorView& gk, const std::vector<int64_t>& offsets,
                        bool packed, int64_t bt, int64_t HV, bool log2) {
    const int64_t B = k->sizes[0], T = k->sizes[1], H = k->sizes[2], K = k->sizes[3];
    if (H == 0 || K == 0) return;
    const int64_t group = HV / H;
    const float* G = static_cast<const float*>(gk.data);
    visit_floating(k->dtype, [&](auto x) {
      using X = decltype(x);
      X* d = static_cast<X*>(k->data);
      training_args::for_each_sequence(offsets, packed, B, T, [&](int64_t row0, int64_t len) {
        for (int64_t t = 0; t < len; ++t) {
          const int64_t row = row0 + t, last = row0 + std::min(len, (t / bt + 1) * bt) - 1;
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < K; ++i) {
              const int64_t hv = h * group;
              const double e = static_cast<double>(G[(last * HV + hv) * K + i]) -
                               static_cast<double>(G[(row * HV + hv) * K + i]);
              X& v = d[(row * H + h) * K + i];
              v = from_double<X>(to_double(v) * (log2 ? std::exp2(e) : std::exp(e)));
            }
        }
      });
    });
  }

  // w, u (in[1], in[2]) = recompute_w_u_fwd(k, v, beta, solve_tril(chunk_scaled_dot_kkt(k, beta,
  // G)), G) with v ~ U(−1, 1) and beta = sigmoid(U(−1, 1)) in k's dtype.
  static void wy(std::vector<Input>& in, uint64_t seed, const TensorView* g, const TensorView* offs,
                 int64_t bt, bool log2) {
    const TensorView& k = in[0].view;
    TensorView& w = in[1].view;
    TensorView& u = in[2].view;
    Input v = data_input("v", u.dtype, u.shape(), seed, 1.0);
    Input beta = data_input("beta", k.dtype, {w.sizes[0], w.sizes[1], w.sizes[2]}, seed + 1, 1.0);
    visit_floating(k.dtype, [&](auto t) {
      using X = decltype(t);
      X* d = static_cast<X*>(beta.view.data);
      for (int64_t i = 0; i < beta.view.numel(); ++i)
        d[i] = from_double<X>(1.0 / (1.0 + std::exp(-to_double(d[i]))));
    });
    ChunkScaledDotKktArgs ka;
    ka.k = k;
    ka.beta = beta.view;
    if (g) ka.g = *g;
    if (offs) ka.seq_offsets = *offs;
    ka.chunk_size = bt;
    ka.gate_log2 = log2;
    const Shape a_shape = {w.sizes[0], w.sizes[1], w.sizes[2], bt};
    if (bt <= 0) return;
    Tensor A = Tensor::empty(a_shape, DType::fp32), Ai = Tensor::empty(a_shape, DType::fp32);
    if (!chunk_scaled_dot_kkt(ka, A.view()).ok()) return;
    SolveTrilArgs sa;
    sa.A = A.view();
    if (offs) sa.seq_offsets = *offs;
    if (!solve_tril(sa, Ai.view()).ok()) return;
    RecomputeWUFwdArgs ra;
    ra.k = k;
    ra.v = v.view;
    ra.beta = beta.view;
    ra.Ai = Ai.view();
    if (g) ra.g = *g;
    if (offs) ra.seq_offsets = *offs;
    ra.gate_log2 = log2;
    (void)recompute_w_u_fwd(ra, w, u);
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkGatedDeltaRuleFwdHDriver);

}  // namespace recops::cli
