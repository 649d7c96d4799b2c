// ops/jagged/common/jagged2_bmm_driver.h: the `recops` CLI's driver of the jagged² matmuls
// (array_jagged_bmm_jagged_out and jagged_jagged_bmm_jagged_out, forward and _bwd), included by
// their driver.cpp (CLI code only). Judged by the double standard: the baseline is the plain
// same-precision loop (the op's *_plain entry).
//
// Case fields beyond the common ones: lengths (the sides N_b), offsets_dtype (every offsets and
// seq_lengths dtype), max_seq_len (required), row_pad (jagged inputs' rows and the jagged² input's
// elements further apart), out_shape (a wrong first output), scale. args: D (default 5),
// seq_lengths (as written, e.g. inconsistent with the offsets).
//
// Input magnitudes: the judge's floor is absolute while an output is a sum of up to
// max(n_b, D) products, so the data are scaled by a power of two chosen from that extent to keep
// a typical output near 2^-5 (one ulp of it then stays far below the floor).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops/jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.h"
#include "ops/jagged/common/jagged2_driver.h"
#include "ops/jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.h"
#include "tools/recops/gen.h"

namespace recops::cli {

// kArray: array_jagged_bmm_jagged_out's folder, else jagged_jagged_bmm_jagged_out's.
template <bool kArray>
class Jagged2BmmDriver final : public FixedDriver {
 public:
  Jagged2BmmDriver()
      : FixedDriver(
            {.ops = {name(), name() + "_bwd"},
             .folder = "jagged/" + name(),
             .fields = {"lengths", "offsets_dtype", "max_seq_len", "row_pad", "out_shape", "scale"},
             .dtype = DType::fp32,
             .args = {{"D", ArgKind::integer}, {"seq_lengths", ArgKind::int_list}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    const bool bwd = row.op != name();
    if (!cs.max_seq_len) return case_error(row, "needs `max_seq_len`");
    if (!cs.lengths) return case_error(row, "needs `lengths` (the sides N_b)");
    p->max_seq_len = *cs.max_seq_len;
    const auto d_it = cs.args.find("D");
    const int64_t D = d_it == cs.args.end() ? 5 : d_it->second.i;
    Input sq_off;
    std::vector<int64_t> sides;
    RECOPS_RETURN_IF_ERROR(make_jagged2_offsets(row, &sq_off, &p->offsets, &sides));
    std::vector<int64_t> rows = {0};
    for (int64_t n : sides) rows.push_back(rows.back() + n);
    const int64_t total_L = rows.back(), total_sq = p->offsets.back();
    if (const auto it = cs.args.find("seq_lengths"); it != cs.args.end()) sides = it->second.list;
    auto jagged = [&](const char* n, uint64_t slot) {
      Input in;
      const Status s =
          make_rowpadded_input(row, n, p->dtype, {total_L}, {D}, cs.row_pad, slot, &in);
      return std::make_pair(s, std::move(in));
    };
    auto square = [&](const char* n, uint64_t slot) {
      Input in;
      const Status s = make_jagged2_values(row, n, p->dtype, total_sq, slot, &in);
      return std::make_pair(s, std::move(in));
    };
    // Input order: [grad,] x, y, seq_lengths, then (array) x_offsets, y_offsets or (jagged)
    // offsets, z_offsets.
    std::vector<std::pair<Status, Input>> data;
    if (bwd) data.push_back(kArray ? jagged("grad", 3) : square("grad", 3));
    data.push_back(kArray ? square("x", 1) : jagged("x", 1));
    data.push_back(jagged("y", 2));
    p->inputs.clear();
    for (auto& [s, in] : data) {
      RECOPS_RETURN_IF_ERROR(s);
      p->inputs.push_back(std::move(in));
    }
    scale(p, D, sides);
    p->inputs.push_back(int_input("seq_lengths", row.offsets_dtype, sides));
    Input row_off = int_input(kArray ? "y_offsets" : "offsets", row.offsets_dtype, rows);
    sq_off.name = kArray ? "x_offsets" : "z_offsets";
    if (kArray) {
      p->inputs.push_back(std::move(sq_off));
      p->inputs.push_back(std::move(row_off));
    } else {
      p->inputs.push_back(std::move(row_off));
      p->inputs.push_back(std::move(sq_off));
      p->scalars["total_z"] = static_cast<double>(total_sq);
    }
    p->sizes = {{"B", static_cast<int64_t>(sides.size())},
                {"D", D},
                {"max_L", p->max_seq_len},
                {"total_L", total_L},
                {"total_sq", total_sq}};
    const Shape jag = {total_L, D}, sq = {total_sq};
    if (bwd)
      p->outputs = {{"dx", kArray ? sq : jag, p->dtype}, {"dy", jag, p->dtype}};
    else
      p->outputs = {{"z", kArray ? jag : sq, p->dtype}};
    if (cs.out_shape) p->outputs[0].shape = *cs.out_shape;
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    return call(p, in, out, ctx, false);
  }
  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    return call(p, views(p.inputs), views(*out), {}, true);
  }

  // The floor: every input and output byte once.
  double bytes(const Problem& p) const override {
    double b = 0;
    for (const Input& in : p.inputs) b += static_cast<double>(in.view.numel() * in.view.itemsize());
    for (const Output& o : p.outputs) {
      double n = 1;
      for (int64_t s : o.shape) n *= static_cast<double>(s);
      b += n * static_cast<double>(dtype_size(p.dtype));
    }
    return b;
  }
  // 2·D·Σ n_b² multiply-adds each product; the backward has two.
  double flops(const Problem& p) const override {
    double w = 0, D = 0;
    for (int64_t n : jagged2_sides(p.offsets)) {
      const double k = static_cast<double>(std::min(n, p.max_seq_len));
      w += k * k;
    }
    for (const auto& [k, v] : p.sizes)
      if (k == "D") D = static_cast<double>(v);
    return (p.op == name() ? 2.0 : 4.0) * D * w;
  }

 private:
  static std::string name() {
    return kArray ? "array_jagged_bmm_jagged_out" : "jagged_jagged_bmm_jagged_out";
  }

  static Status call(const Problem& p, const std::vector<TensorView>& in,
                     const std::vector<TensorView>& out, const Context& ctx, bool plain) {
    const bool bwd = p.op != name();
    const size_t g = bwd ? 1 : 0;  // index of x
    if constexpr (kArray) {
      const ArrayJaggedBmmJaggedOutArgs a{in[g],     in[g + 1], in[g + 2],
                                          in[g + 3], in[g + 4], p.max_seq_len};
      if (!bwd)
        return plain ? array_jagged_bmm_jagged_out_plain(a, out[0])
                     : array_jagged_bmm_jagged_out(a, out[0], ctx);
      const ArrayJaggedBmmJaggedOutBwdArgs b{in[0],       a.x,         a.y,          a.seq_lengths,
                                             a.x_offsets, a.y_offsets, p.max_seq_len};
      return plain ? array_jagged_bmm_jagged_out_bwd_plain(b, out[0], out[1])
                   : array_jagged_bmm_jagged_out_bwd(b, out[0], out[1], ctx);
    } else {
      const auto total_z = static_cast<int64_t>(p.scalars.at("total_z"));
      const JaggedJaggedBmmJaggedOutArgs a{in[g],     in[g + 1], in[g + 2],    in[g + 3],
                                           in[g + 4], total_z,   p.max_seq_len};
      if (!bwd)
        return plain ? jagged_jagged_bmm_jagged_out_plain(a, out[0])
                     : jagged_jagged_bmm_jagged_out(a, out[0], ctx);
      const JaggedJaggedBmmJaggedOutBwdArgs b{in[0],     a.x,         a.y,     a.seq_lengths,
                                              a.offsets, a.z_offsets, total_z, p.max_seq_len};
      return plain ? jagged_jagged_bmm_jagged_out_bwd_plain(b, out[0], out[1])
                   : jagged_jagged_bmm_jagged_out_bwd(b, out[0], out[1], ctx);
    }
  }

  // Scales the floating inputs by a power of two so that a sum of `inner` products of
  // uniform(-s, s) values (standard deviation about sqrt(inner) s^2 / 3) lands near 2^-5.
  static void scale(Problem* p, int64_t D, const std::vector<int64_t>& sides) {
    int64_t inner = std::max<int64_t>(1, D);
    for (int64_t n : sides) inner = std::max(inner, std::min(n, p->max_seq_len));
    const double s = std::exp2(
        std::round(std::log2(std::sqrt(3.0 / (32.0 * std::sqrt(static_cast<double>(inner)))))));
    for (Input& in : p->inputs)
      visit_floating(in.view.dtype, [&](auto t) {
        using T = decltype(t);
        T* d = static_cast<T*>(in.buf.data());
        for (int64_t i = 0; i < in.buf.numel(); ++i) d[i] = from_double<T>(to_double(d[i]) * s);
      });
  }
};

}  // namespace recops::cli
