// training/recompute_w_u_fwd/driver.cpp: the `recops` CLI's driver of recompute_w_u_fwd: builds a
// case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h), and
// supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (k's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype, scale (k's and v's values,
// U(−1, 1)·scale). args: V (v's last dim, default K), gva (HV / H, default 1), chunk_size (Ai's
// last dim BT, default 64; passed as the argument only when the case gives it, else None),
// gates (default true: pass G), gate_scale (default 1: per-position log decays
// −|U(−1, 1)|·gate_scale), gate_log2 (G in log2 units), l2norm (default true: k's rows
// l2-normalised, fla's conditioning), random (default false), T (with lengths/offsets: k's T
// instead of the offsets' total, for a mismatch case).
// beta = sigmoid(U(−1, 1)) in k's dtype; G is recops' chunk_local_cumsum of the decays (fp32, the
// chunks restarting at each sequence start). Ai (fp32): by default the GDN pipeline on these very
// inputs, recops' chunk_scaled_dot_kkt then solve_tril, so Ai = (I + A)^-1 of this k, beta, G;
// with `random`, unit lower triangular with U(−1, 1)·scale below the diagonal (zero above it and
// in a tail chunk's missing columns). Where the pipeline refuses the inputs (refusal cases) Ai
// keeps raw U(−1, 1) data and the entry's refusal is what the case checks.
#include <cmath>
#include <cstring>

#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_driver.h"
#include "ops/training/recompute_w_u_fwd/recompute_w_u_fwd.h"
#include "ops/training/solve_tril/solve_tril.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class RecomputeWUFwdDriver final : public training_args::GdnDriver {
 public:
  RecomputeWUFwdDriver()
      : GdnDriver(
            "recompute_w_u_fwd",
            {{"V", ArgKind::integer}, {"l2norm", ArgKind::boolean}, {"random", ArgKind::boolean}},
            true) {}

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
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed, cs.scale));
    if (flag(cs, "l2norm", true)) training_args::normalize_rows(&p->inputs.back().view);
    p->inputs.push_back(data_input("v", p->dtype, {B, T, HV, V}, cs.seed + 1, cs.scale));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 2, 1.0));
    map_values(&p->inputs.back(), [](double u) { return 1.0 / (1.0 + std::exp(-u)); });
    p->inputs.push_back(data_input("Ai", DType::fp32, {B, T, HV, bt}, cs.seed + 3, cs.scale));
    if (gates) {
      p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 4, 1.0));
      const double gs = number(cs, "gate_scale", 1.0);
      map_values(&p->inputs.back(), [gs](double u) { return -std::fabs(u) * gs; });
    }
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    const TensorView* offs = packed ? &p->inputs.back().view : nullptr;
    if (gates)
      training_args::chunk_cumsum(&p->inputs[4].view, offs, bt, training_args::gate_unit(log2));
    if (flag(cs, "random", false))
      unit_lower(&p->inputs[3], p->offsets, packed);
    else
      pipeline(p->inputs, gates ? &p->inputs[4].view : nullptr, offs, bt, log2);
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", K}, {"V", V}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"w", {B, T, HV, K}, p->dtype}, {"u", {B, T, HV, V}, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return recompute_w_u_fwd(args(p, in), out[0], out[1], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return recompute_w_u_fwd_plain(args(p, views(p.inputs)), o[0], o[1]);
  }

  // Byte floor: every input read once, w and u written once.
  double bytes(const Problem& p) const override {
    double b = 0;
    for (const Input& in : p.inputs) b += static_cast<double>(in.view.numel() * in.view.itemsize());
    for (const Output& o : p.outputs) {
      int64_t n = 1;
      for (int64_t s : o.shape) n *= s;
      b += static_cast<double>(n * dtype_size(o.dtype));
    }
    return b;
  }

  // The dense chunk matmuls a GPU does: 2·BT multiply-adds per element of w and u.
  double flops(const Problem& p) const override {
    const Shape& ai = p.inputs[3].view.shape();
    if (ai.size() != 4) return -1;
    const double K = static_cast<double>(p.inputs[0].view.sizes[3]);
    const double V = static_cast<double>(p.inputs[1].view.sizes[3]);
    return 2.0 * static_cast<double>(ai[0] * ai[1] * ai[2] * ai[3]) * (K + V);
  }

 private:
  static RecomputeWUFwdArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    RecomputeWUFwdArgs a;
    a.k = in[0];
    a.v = in[1];
    a.beta = in[2];
    a.Ai = in[3];
    size_t i = 4;
    if (sc.at("gates") != 0) a.g = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    if (const auto it = sc.find("chunk_size"); it != sc.end())
      a.chunk_size = static_cast<int64_t>(it->second);
    a.gate_log2 = sc.at("gate_log2") != 0;
    return a;
  }

  // v = f(v) in place, rounded to the input's dtype.
  template <class F>
  static void map_values(Input* in, F f) {
    TensorView& v = in->view;
    visit_floating(v.dtype, [&](auto t) {
      using T = decltype(t);
      T* d = static_cast<T*>(v.data);
      for (int64_t i = 0; i < v.numel(); ++i) d[i] = from_double<T>(f(to_double(d[i])));
    });
  }

  // Ai = solve_tril(chunk_scaled_dot_kkt(k, beta, G)) of the case's inputs (fp32 throughout).
  static void pipeline(std::vector<Input>& in, const TensorView* g, const TensorView* offs,
                       int64_t bt, bool log2) {
    TensorView& ai = in[3].view;
    ChunkScaledDotKktArgs ka;
    ka.k = in[0].view;
    ka.beta = in[2].view;
    if (g) ka.g = *g;
    if (offs) ka.seq_offsets = *offs;
    ka.chunk_size = bt;
    ka.gate_log2 = log2;
    Tensor A = Tensor::empty(ai.shape(), DType::fp32);
    if (!chunk_scaled_dot_kkt(ka, A.view()).ok()) return;
    SolveTrilArgs sa;
    sa.A = A.view();
    if (offs) sa.seq_offsets = *offs;
    (void)solve_tril(sa, ai);
  }

  // Ai in place: per chunk, 1 on the diagonal, the U(−1, 1)·scale data below it, 0 above it and
  // in the columns past a tail chunk.
  static void unit_lower(Input* in, const std::vector<int64_t>& offsets, bool packed) {
    TensorView& v = in->view;
    float* d = static_cast<float*>(v.data);
    const int64_t B = v.sizes[0], T = v.sizes[1], HV = v.sizes[2], BT = v.sizes[3];
    auto run = [&](int64_t row0, int64_t len) {
      for (int64_t t = 0; t < len; ++t)
        for (int64_t h = 0; h < HV; ++h) {
          float* r = d + ((row0 + t) * HV + h) * BT;
          const int64_t i = t % BT;
          for (int64_t j = 0; j < BT; ++j) r[j] = j < i ? r[j] : j == i ? 1.0f : 0.0f;
        }
    };
    training_args::for_each_sequence(offsets, packed, B, T, run);
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(RecomputeWUFwdDriver);

}  // namespace recops::cli
