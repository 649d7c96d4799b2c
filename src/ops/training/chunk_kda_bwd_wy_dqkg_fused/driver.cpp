// training/chunk_kda_bwd_wy_dqkg_fused/driver.cpp: the `recops` CLI's driver of
// chunk_kda_bwd_wy_dqkg_fused: builds a case's inputs, calls the public entry, counts bytes and
// FLOPs (tools/recops/driver.h), and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (q's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype. args: V (default 64), gva
// (HV / H, default 1), chunk_size (default 64), gate_scale (default 1: per-position, per-channel
// log decays −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units), scale (absent: the default
// K^-1/2), extra_chunks (added to h's NT), T (with lengths/offsets: q's T instead of the offsets'
// total, for a mismatch case). q, k = U(−1, 1) with rows l2-normalised (fla's conditioning); v,
// v_new, do, dv2, h, dh = U(−1, 1); beta = sigmoid(U(−1, 1)), all in the case's dtype; G (fp32,
// [B, T, HV, K]) is recops' chunk_local_cumsum of the decays, chunks restarting at each sequence
// start; Akk (fp32) = (I + M)^-1 of these very inputs, M_ij = β_i Σ_c k_ic k_jc exp(G_ic − G_jc)
// (j < i in the chunk), formed here in fp64 by forward substitution (row t of a chunk holds its
// row of Akk, zero above the diagonal and past the chunk). Where the inputs cannot give a chunk
// grid (refusal cases) Akk keeps raw U(−1, 1) data and the entry's refusal is what the case checks.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/training/chunk_kda_bwd_wy_dqkg_fused/chunk_kda_bwd_wy_dqkg_fused.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::number;

class ChunkKdaBwdWyDqkgFusedDriver final : public training_args::GdnDriver {
 public:
  ChunkKdaBwdWyDqkgFusedDriver()
      : GdnDriver("chunk_kda_bwd_wy_dqkg_fused", {{"V", ArgKind::integer},
                                                  {"scale", ArgKind::number},
                                                  {"extra_chunks", ArgKind::integer}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "q", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    (void)gates;  // KDA always has its per-channel gate
    const int64_t V = static_cast<int64_t>(number(cs, "V", 64));
    const int64_t nt = training_args::chunk_count(p->offsets, packed, T, bt) +
                       static_cast<int64_t>(number(cs, "extra_chunks", 0));
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    // Stated under the argument's name only when the case gives it (recops record writes the
    // scalars named like an argument into its manifest; absent means the schema's None).
    if (cs.args.count("scale")) sc["scale"] = number(cs, "scale", 1.0);
    sc["packed"] = packed;
    p->inputs.clear();
    const bool fl = is_floating(p->dtype);  // false in a refusal case of an integer q
    const Shape vs{B, T, HV, V}, hs{B, nt, HV, K, V};
    p->inputs.push_back(data_input("q", p->dtype, shape, cs.seed, 1.0));
    if (fl) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed + 1, 1.0));
    if (fl) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("v", p->dtype, vs, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("v_new", p->dtype, vs, cs.seed + 3, 1.0));
    p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV, K}, cs.seed + 4, 1.0));
    TensorView& g = p->inputs.back().view;
    training_args::gate_decays(&g, number(cs, "gate_scale", 1.0));
    const bool grid = training_args::chunk_cumsum(&g, packed ? &off.view : nullptr, bt,
                                                  training_args::gate_unit(log2));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 5, 1.0));
    if (fl) sigmoid(&p->inputs.back().view);
    p->inputs.push_back(data_input("Akk", DType::fp32, {B, T, HV, bt}, cs.seed + 6, 1.0));
    p->inputs.push_back(data_input("h", p->dtype, hs, cs.seed + 7, 1.0));
    p->inputs.push_back(data_input("do", p->dtype, vs, cs.seed + 8, 1.0));
    p->inputs.push_back(data_input("dh", p->dtype, hs, cs.seed + 9, 1.0));
    p->inputs.push_back(data_input("dv2", p->dtype, vs, cs.seed + 10, 1.0));
    if (grid && fl)
      kda_inverse(p->inputs[1].view, p->inputs[5].view, p->inputs[4].view, p->offsets, packed, bt,
                  log2, &p->inputs[6].view);
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"dq", shape, DType::fp32},
                  {"dk", shape, DType::fp32},
                  {"dv", vs, p->dtype},
                  {"dbeta", {B, T, HV}, DType::fp32},
                  {"dg", {B, T, HV, K}, DType::fp32},
                  {"dA", {B, T, HV, bt}, DType::fp32}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_kda_bwd_wy_dqkg_fused(args(p, in),
                                       {out[0], out[1], out[2], out[3], out[4], out[5]}, ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return chunk_kda_bwd_wy_dqkg_fused_plain(args(p, views(p.inputs)),
                                             {o[0], o[1], o[2], o[3], o[4], o[5]});
  }

  // Byte floor: every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

  // The dense chunk matmuls a GPU does, per position and value head: do·h, v_new·dh, dv2·h
  // (2·K·V each), Akkᵀdv2 and Akkᵀdw (2·BT·(V + K)), dv2·vᵀ and dw·(e⊙k)ᵀ (2·BT·(V + K)), the two
  // BT×BT products of dA (4·BT²): 2·B·T·HV·(3·K·V + 2·BT·(K + V) + 2·BT²).
  double flops(const Problem& p) const override {
    auto get = [&](const char* n) {
      for (const auto& [name, v] : p.sizes)
        if (name == n) return static_cast<double>(v);
      return 0.0;
    };
    const double B = get("B"), T = get("T"), HV = get("HV"), K = get("K"), V = get("V");
    const double bt = get("BT");
    return 2.0 * B * T * HV * (3 * K * V + 2 * bt * (K + V) + 2 * bt * bt);
  }

 private:
  static ChunkKdaBwdWyDqkgFusedArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkKdaBwdWyDqkgFusedArgs a;
    a.q = in[0];
    a.k = in[1];
    a.v = in[2];
    a.v_new = in[3];
    a.g = in[4];
    a.beta = in[5];
    a.Akk = in[6];
    a.h = in[7];
    a.d_o = in[8];
    a.dh = in[9];
    a.dv2 = in[10];
    if (sc.at("packed") != 0) a.seq_offsets = in[11];
    if (const auto it = sc.find("scale"); it != sc.end()) a.scale = it->second;
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
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

  // Element i of a floating tensor in fp64.
  static double val(const TensorView& t, int64_t i) {
    double r = 0;
    visit_floating(t.dtype, [&](auto tag) {
      using X = decltype(tag);
      r = to_double(static_cast<const X*>(t.data)[i]);
    });
    return r;
  }

  // *akk (fp32 [B, T, HV, bt]) ← per chunk (I + M)^-1, M_ij = β_i Σ_c k_ic k_jc exp(G_ic − G_jc)
  // for j < i (exp2 with log2), by forward substitution in fp64; zero above the diagonal and in
  // the columns past a tail chunk.
  static void kda_inverse(const TensorView& k, const TensorView& beta, const TensorView& g,
                          const std::vector<int64_t>& offsets, bool packed, int64_t bt, bool log2,
                          TensorView* akk) {
    const int64_t B = k.sizes[0], T = k.sizes[1], H = k.sizes[2], K = k.sizes[3];
    const int64_t HV = beta.sizes[2];
    if (bt <= 0 || (H == 0 && HV != 0) || (H > 0 && HV % H != 0)) return;
    float* out = static_cast<float*>(akk->data);
    std::fill(out, out + akk->numel(), 0.0f);
    auto ex = [log2](double x) { return log2 ? std::exp2(x) : std::exp(x); };
    training_args::for_each_sequence(offsets, packed, B, T, [&](int64_t row0, int64_t len) {
      for (int64_t c0 = 0; c0 < len; c0 += bt) {
        const int64_t R = std::min(bt, len - c0), r0 = row0 + c0;
        for (int64_t hv = 0; hv < HV; ++hv) {
          const int64_t h = hv / (HV / H);
          std::vector<double> M(static_cast<size_t>(R * R), 0.0), X(M.size(), 0.0);
          for (int64_t i = 0; i < R; ++i)
            for (int64_t j = 0; j < i; ++j) {
              double s = 0;
              for (int64_t c = 0; c < K; ++c)
                s +=
                    val(k, ((r0 + i) * H + h) * K + c) * val(k, ((r0 + j) * H + h) * K + c) *
                    ex(val(g, ((r0 + i) * HV + hv) * K + c) - val(g, ((r0 + j) * HV + hv) * K + c));
              M[static_cast<size_t>(i * R + j)] = val(beta, (r0 + i) * HV + hv) * s;
            }
          // X = (I + M)^-1, row by row: X_i = e_i − Σ_{j<i} M_ij X_j.
          for (int64_t i = 0; i < R; ++i) {
            X[static_cast<size_t>(i * R + i)] = 1.0;
            for (int64_t j = 0; j < i; ++j) {
              const double m = M[static_cast<size_t>(i * R + j)];
              for (int64_t c = 0; c <= j; ++c)
                X[static_cast<size_t>(i * R + c)] -= m * X[static_cast<size_t>(j * R + c)];
            }
            for (int64_t c = 0; c <= i; ++c)
              out[((r0 + i) * HV + hv) * bt + c] =
                  static_cast<float>(X[static_cast<size_t>(i * R + c)]);
          }
        }
      }
    });
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkKdaBwdWyDqkgFusedDriver);

}  // namespace recops::cli
