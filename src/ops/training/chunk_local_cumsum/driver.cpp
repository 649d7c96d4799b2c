// training/chunk_local_cumsum/driver.cpp: the `recops` CLI's driver of chunk_local_cumsum and
// chunk_local_cumsum_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (g's, [B, T, H] or [B, T, H, K], required; with
// lengths/offsets T is replaced by the offsets' total), lengths | offsets, offsets_dtype,
// out_dtype (out's; default fp32), scale (g's values). args: chunk_size (default 64), reverse,
// cum_scale (the op's scale, default 1), gates (g = -|g|: non-positive, as GDN's log decays),
// T (with lengths/offsets: g's T instead of the offsets' total, for a mismatch case).
// The backward's dout has out_dtype and g's shape (values U(-1, 1)).
#include <cmath>

#include "ops/training/chunk_local_cumsum/chunk_local_cumsum.h"
#include "ops/training/common/case_args.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

// g = -|g| in place (any floating dtype).
void make_gates(Input* in) {
  TensorView& v = in->view;
  visit_floating(v.dtype, [&](auto t) {
    using T = decltype(t);
    T* d = static_cast<T*>(v.data);
    for (int64_t i = 0; i < v.numel(); ++i) d[i] = from_double<T>(-std::fabs(to_double(d[i])));
  });
}

class ChunkLocalCumsumDriver final : public FixedDriver {
 public:
  ChunkLocalCumsumDriver()
      : FixedDriver(
            {.ops = {"chunk_local_cumsum", "chunk_local_cumsum_bwd"},
             .folder = "training/chunk_local_cumsum",
             .fields = {"shape", "scale", "lengths", "offsets", "offsets_dtype", "out_dtype"},
             .dtype = DType::fp32,
             .args = {{"chunk_size", ArgKind::integer},
                      {"reverse", ArgKind::boolean},
                      {"cum_scale", ArgKind::number},
                      {"gates", ArgKind::boolean},
                      {"T", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "g's [B, T, H] or [B, T, H, K]"));
    const bool bwd = row.op == "chunk_local_cumsum_bwd";
    Shape shape = *cs.shape;
    if (shape.size() < 2) return case_error(row, "shape must have at least [B, T]");
    const bool packed = cs.lengths || cs.offsets;
    Input off;
    if (packed) {
      RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
      shape[1] = p->offsets.empty() ? 0 : std::max<int64_t>(0, p->offsets.back());
      shape[1] = static_cast<int64_t>(number(cs, "T", static_cast<double>(shape[1])));
    }
    const DType out_dtype = row.out_dtype.value_or(DType::fp32);
    auto& sc = p->scalars;
    sc["chunk_size"] = number(cs, "chunk_size", 64);
    sc["reverse"] = flag(cs, "reverse", false);
    sc["scale"] = number(cs, "cum_scale", 1.0);  // under the argument's name (record's manifest)
    sc["out_dtype"] = static_cast<double>(static_cast<int>(out_dtype));
    sc["packed"] = packed;
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("dout", out_dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("g", p->dtype, shape, cs.seed, cs.scale));
    if (flag(cs, "gates", false)) make_gates(&p->inputs.back());
    if (packed) {
      off.name = "seq_offsets";
      p->inputs.push_back(std::move(off));
    }
    int64_t C = 1;
    for (size_t i = 2; i < shape.size(); ++i) C *= shape[i];
    p->sizes = {{"B", shape[0]}, {"T", shape[1]}, {"C", C}};
    if (packed) p->sizes.push_back({"N", static_cast<int64_t>(p->offsets.size()) - 1});
    p->outputs = {{bwd ? "dg" : "out", shape, bwd ? p->dtype : out_dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const auto& sc = p.scalars;
    const int64_t bt = static_cast<int64_t>(sc.at("chunk_size"));
    const bool reverse = sc.at("reverse") != 0;
    const double scale = sc.at("scale");
    const std::optional<DType> t = static_cast<DType>(static_cast<int>(sc.at("out_dtype")));
    const bool packed = sc.at("packed") != 0;
    if (p.op == "chunk_local_cumsum_bwd") {
      ChunkLocalCumsumBwdArgs a{in[0], in[1], bt, reverse, scale, std::nullopt, t};
      if (packed) a.seq_offsets = in[2];
      return chunk_local_cumsum_bwd(a, out[0], ctx);
    }
    ChunkLocalCumsumArgs a{in[0], bt, reverse, scale, std::nullopt, t};
    if (packed) a.seq_offsets = in[1];
    return chunk_local_cumsum(a, out[0], ctx);
  }

  // Byte floor (training_ops.md §6): g read once, out written once (the backward reads dout and
  // writes dg; g is only its shape); seq_offsets counted too.
  double bytes(const Problem& p) const override {
    double b = 0;
    for (const Input& in : p.inputs)
      if (in.name != "g" || p.op == "chunk_local_cumsum")
        b += static_cast<double>(in.view.numel() * in.view.itemsize());
    for (const Output& o : p.outputs) {
      int64_t n = 1;
      for (int64_t s : o.shape) n *= s;
      b += static_cast<double>(n * dtype_size(o.dtype));
    }
    return b;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(ChunkLocalCumsumDriver);

}  // namespace recops::cli
