// training/chunk_scaled_dot_kkt/driver.cpp: the `recops` CLI's driver of chunk_scaled_dot_kkt:
// builds a case's inputs, calls the public entry, counts bytes and FLOPs (tools/recops/driver.h),
// and supplies the double standard's plain baseline.
//
// Case fields beyond the common ones: shape (k's [B, T, H, K], required; with lengths/offsets T is
// replaced by the offsets' total), lengths | offsets, offsets_dtype, scale (k's values,
// U(−1, 1)·scale). args: chunk_size (default 64), gva (HV / H, default 1), gates (default true:
// pass G), gate_scale (default 1: per-position log decays −|U(−1, 1)|·gate_scale), gate_log2
// (G in log2 units), T (with lengths/offsets: k's T instead of the offsets' total, for a mismatch
// case). beta = sigmoid(U(−1, 1)) in k's dtype; G is the chunk-local cumsum of the decays (fp64
// sums, chunks restarting at each sequence start), stored fp32, as chunk_local_cumsum gives it.
#include <cmath>

#include "ops/training/chunk_scaled_dot_kkt/chunk_scaled_dot_kkt.h"
#include "ops/training/common/gdn_driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

class ChunkScaledDotKktDriver final : public training_args::GdnDriver {
 public:
  ChunkScaledDotKktDriver() : GdnDriver("chunk_scaled_dot_kkt", {}, true) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    Case c;
    RECOPS_RETURN_IF_ERROR(begin_case(row, p, "k", &c));
    auto& [shape, packed, off, B, T, H, K, HV, bt, gates, log2] = c;
    auto& sc = p->scalars;
    sc["chunk_size"] = static_cast<double>(bt);
    sc["gate_log2"] = log2;
    sc["gates"] = gates;
    sc["packed"] = packed;
    p->inputs.clear();
    p->inputs.push_back(data_input("k", p->dtype, shape, cs.seed, cs.scale));
    p->inputs.push_back(data_input("beta", p->dtype, {B, T, HV}, cs.seed + 1, 1.0));
    map_values(&p->inputs.back(), [](double u) { return 1.0 / (1.0 + std::exp(-u)); });
    if (gates) {
      p->inputs.push_back(data_input("g", DType::fp32, {B, T, HV}, cs.seed + 2, 1.0));
      training_args::gate_cumsum_fp64(&p->inputs.back().view, p->offsets, packed, bt,
                                      number(cs, "gate_scale", 1.0),
                                      training_args::gate_unit(log2));
    }
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    p->sizes = {{"B", B}, {"T", T}, {"H", H}, {"HV", HV}, {"K", shape[3]}, {"BT", bt}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{"A", {B, T, HV, bt}, DType::fp32}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return chunk_scaled_dot_kkt(args(p, in), out[0], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto o = views(*out);
    return chunk_scaled_dot_kkt_plain(args(p, views(p.inputs)), o[0]);
  }

  // Byte floor: k, beta, G (and seq_offsets) read once, A written once.
  double bytes(const Problem& p) const override {
    double b = 0;
    for (const Input& in : p.inputs) b += static_cast<double>(in.view.numel() * in.view.itemsize());
    const Shape& s = p.outputs[0].shape;
    return b + 4.0 * static_cast<double>(s[0] * s[1] * s[2] * s[3]);
  }

  // 2·K per element of A's lower triangle (the dot), counted over the full BT columns per row
  // per value head (the dense chunk matmul a GPU does): 2·B·T·HV·BT·K.
  double flops(const Problem& p) const override {
    const TensorView& k = p.inputs[0].view;
    const Shape& s = p.outputs[0].shape;
    return 2.0 * static_cast<double>(s[0] * s[1] * s[2] * s[3]) * static_cast<double>(k.sizes[3]);
  }

 private:
  static ChunkScaledDotKktArgs args(const Problem& p, const std::vector<TensorView>& in) {
    const auto& sc = p.scalars;
    ChunkScaledDotKktArgs a;
    a.k = in[0];
    a.beta = in[1];
    size_t i = 2;
    if (sc.at("gates") != 0) a.g = in[i++];
    if (sc.at("packed") != 0) a.seq_offsets = in[i++];
    a.chunk_size = static_cast<int64_t>(sc.at("chunk_size"));
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
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkScaledDotKktDriver);

}  // namespace recops::cli
