// jagged/concat_1d_jagged/driver.cpp: the `recops` CLI's driver of concat_1d_jagged and
// concat_1d_jagged_bwd: builds a case's inputs, calls the public entry, counts bytes.
//
// Case fields: lengths | offsets (part A's samples; B = their count), offsets_dtype, row_pad
// (every data input's elements, and a dense part's samples, 1 + row_pad / S + row_pad apart),
// out_shape (the values output's). args: dense_a, dense_b (S: that part is dense [B, S]; with
// vector: [B], S = 1), vector (dense parts 1-D), len_b (part B's lengths: uniform in [0, len_b]
// from the case seed; default 7).
#include "core/hash_rng.h"
#include "ops/jagged/concat_1d_jagged/concat_1d_jagged.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

int64_t int_arg(const CaseSpec& cs, const char* name, int64_t def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.i;
}

class Concat1dJaggedDriver final : public FixedDriver {
 public:
  Concat1dJaggedDriver()
      : FixedDriver({.ops = {"concat_1d_jagged", "concat_1d_jagged_bwd"},
                     .folder = "jagged/concat_1d_jagged",
                     .fields = {"lengths", "offsets", "offsets_dtype", "row_pad", "out_shape"},
                     .dtype = DType::fp32,
                     .args = {{"dense_a", ArgKind::integer},
                              {"dense_b", ArgKind::integer},
                              {"vector", ArgKind::boolean},
                              {"len_b", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == "concat_1d_jagged_bwd";
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    Input off_a;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off_a, &p->offsets));
    off_a.name = "offsets_a";  // the argument's name (`recops record`'s manifest)
    const int64_t B = p->offsets.empty() ? 0 : static_cast<int64_t>(p->offsets.size()) - 1;
    const int64_t Sa = int_arg(cs, "dense_a", -1), Sb = int_arg(cs, "dense_b", -1);
    const auto vec = cs.args.find("vector");
    const bool vector = vec != cs.args.end() && vec->second.b;
    if (vector && ((Sa >= 0 && Sa != 1) || (Sb >= 0 && Sb != 1)))
      return case_error(row, "vector (dense [B] parts) needs dense_a / dense_b = 1");
    const int64_t len_b = int_arg(cs, "len_b", 7);
    if (len_b < 0) return case_error(row, "len_b must be >= 0");
    std::vector<int64_t> ob(static_cast<size_t>(B) + 1, 0);
    const uint64_t sb = tensor_seed(cs.seed, 7);
    for (int64_t b = 0; b < B; ++b)
      ob[static_cast<size_t>(b) + 1] =
          ob[static_cast<size_t>(b)] + core::uniform_int(sb, static_cast<uint64_t>(b), 0, len_b);
    const int64_t last_a = p->offsets.empty() ? 0 : p->offsets.back();
    const int64_t Ta = Sa >= 0 ? B * Sa : (last_a < 0 ? 0 : last_a);
    const int64_t Tb = Sb >= 0 ? B * Sb : ob.back();
    auto shape_of = [&](int64_t S, int64_t T) -> std::pair<Shape, std::vector<int64_t>> {
      if (S < 0) return {{T}, {}};
      if (vector) return {{B}, {}};
      return {{B}, {S}};
    };
    const auto [lead_a, E_a] = shape_of(Sa, Ta);
    const auto [lead_b, E_b] = shape_of(Sb, Tb);
    p->scalars["dense_a"] = Sa >= 0;
    p->scalars["dense_b"] = Sb >= 0;
    p->inputs.clear();
    if (bwd) {
      Input g;
      RECOPS_RETURN_IF_ERROR(
          make_rowpadded_input(row, "grad", p->dtype, {Ta + Tb}, {}, cs.row_pad, 3, &g));
      p->inputs.push_back(std::move(g));
    }
    Input va, vb;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values_a", p->dtype, lead_a, E_a, cs.row_pad, 1, &va));
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values_b", p->dtype, lead_b, E_b, cs.row_pad, 2, &vb));
    const DType odt = off_a.view.dtype;
    p->inputs.push_back(std::move(va));
    if (Sa < 0) p->inputs.push_back(std::move(off_a));
    p->inputs.push_back(std::move(vb));
    if (Sb < 0) p->inputs.push_back(int_input("offsets_b", odt, ob));
    p->sizes = {{"B", B}, {"T_A", Ta}, {"T_B", Tb}};
    Concat1dJaggedBwdArgs a = unpack(*p, views(p->inputs));
    if (bwd) {
      p->outputs = {{"grad_a", a.values_a.shape(), p->dtype},
                    {"grad_b", a.values_b.shape(), p->dtype}};
      return Status::Ok();
    }
    Shape vs, os;
    DType out_odt = DType::int64;
    p->shape_error = concat_1d_jagged_shape(a, &vs, &os, &out_odt);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) vs = *cs.out_shape;
    p->outputs = {{"values", vs, p->dtype}, {"offsets", os, out_odt}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const Concat1dJaggedBwdArgs a = unpack(p, in);
    if (p.op == "concat_1d_jagged") return concat_1d_jagged(a, out[0], out[1], ctx);
    return concat_1d_jagged_bwd(a, out[0], out[1], ctx);
  }

  // The floor: every input and output byte once (each element is moved once).
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  static Concat1dJaggedBwdArgs unpack(const Problem& p, const std::vector<TensorView>& in) {
    Concat1dJaggedBwdArgs a;
    size_t i = 0;
    if (p.op == "concat_1d_jagged_bwd") a.grad = in[i++];
    a.values_a = in[i++];
    if (p.scalars.at("dense_a") == 0) a.offsets_a = in[i++];
    a.values_b = in[i++];
    if (p.scalars.at("dense_b") == 0) a.offsets_b = in[i++];
    return a;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Concat1dJaggedDriver);

}  // namespace recops::cli
