// jagged/concat_2d_jagged/driver.cpp: the `recops` CLI's driver of concat_2d_jagged and
// concat_2d_jagged_bwd: builds a case's inputs, calls the public entry, counts bytes.
//
// Case fields: lengths | offsets (side A's samples; B = their count), offsets_dtype, E ([D]),
// row_pad (row stride D + row_pad of every data input), out_shape. args: dense_a, dense_b (S:
// that side is dense [B, S, D]), len_b (B's lengths: uniform in [0, len_b] from the seed;
// default 7), n_prefix (n_prefix_from_right), replace (is_replace when nonzero).
#include "ops/jagged/concat_2d_jagged/concat_2d_jagged.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

int64_t arg_or(const CaseSpec& cs, const char* name, int64_t def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.i;
}

// Side B's lengths: a stateless hash of (seed, b) in [0, hi].
std::vector<int64_t> b_lengths(uint64_t seed, int64_t B, int64_t hi) {
  std::vector<int64_t> off(static_cast<size_t>(B) + 1, 0);
  for (int64_t b = 0; b < B; ++b) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(b) + 0x632BE59BD9B4E019ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    off[static_cast<size_t>(b) + 1] =
        off[static_cast<size_t>(b)] + static_cast<int64_t>(z % static_cast<uint64_t>(hi + 1));
  }
  return off;
}

class Concat2dJaggedDriver final : public FixedDriver {
 public:
  Concat2dJaggedDriver()
      : FixedDriver({.ops = {"concat_2d_jagged", "concat_2d_jagged_bwd"},
                     .folder = "jagged/concat_2d_jagged",
                     .fields = {"lengths", "offsets", "offsets_dtype", "E", "row_pad", "out_shape"},
                     .dtype = DType::fp32,
                     .args = {{"dense_a", ArgKind::integer},
                              {"dense_b", ArgKind::integer},
                              {"len_b", ArgKind::integer},
                              {"n_prefix", ArgKind::integer},
                              {"replace", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == "concat_2d_jagged_bwd";
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    Input off_a;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off_a, &p->offsets));
    off_a.name = "offsets_a";  // the argument's name (`recops record` writes inputs by name)
    const int64_t B = p->offsets.empty() ? 0 : static_cast<int64_t>(p->offsets.size()) - 1;
    const int64_t Sa = arg_or(cs, "dense_a", -1), Sb = arg_or(cs, "dense_b", -1);
    const int64_t len_b = arg_or(cs, "len_b", 7);
    if (len_b < 0) return case_error(row, "len_b must be >= 0");
    const std::vector<int64_t> ob = b_lengths(cs.seed, B, len_b);
    const int64_t Ta = Sa >= 0 ? B * Sa : (p->offsets.empty() ? 0 : p->offsets.back());
    const int64_t Tb = Sb >= 0 ? B * Sb : ob.back();
    const Shape lead_a = Sa >= 0 ? Shape{B, Sa} : Shape{Ta < 0 ? 0 : Ta};
    const Shape lead_b = Sb >= 0 ? Shape{B, Sb} : Shape{Tb};
    p->scalars["dense_a"] = Sa >= 0;
    p->scalars["dense_b"] = Sb >= 0;
    p->scalars["n_prefix"] = static_cast<double>(arg_or(cs, "n_prefix", 0));
    p->scalars["replace"] = arg_or(cs, "replace", 0) != 0;
    const bool replace = p->scalars["replace"] != 0;
    // ... and under the names of the op's table (`recops record`'s manifest)
    p->scalars["n_prefix_from_right"] = p->scalars["n_prefix"];
    p->scalars["is_replace"] = p->scalars["replace"];
    std::vector<int64_t> E = cs.E.empty() ? std::vector<int64_t>{1} : cs.E;
    const int64_t D = E[0];
    p->inputs.clear();
    if (bwd) {
      Input g;
      const int64_t rows = (Ta < 0 ? 0 : Ta) + (replace ? 0 : Tb);
      RECOPS_RETURN_IF_ERROR(
          make_rowpadded_input(row, "grad", p->dtype, {rows}, E, cs.row_pad, 3, &g));
      p->inputs.push_back(std::move(g));
    }
    const DType odt = off_a.view.dtype;
    Input va, vb;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values_a", p->dtype, lead_a, E, cs.row_pad, 1, &va));
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values_b", p->dtype, lead_b, E, cs.row_pad, 2, &vb));
    p->inputs.push_back(std::move(va));
    if (Sa < 0) p->inputs.push_back(std::move(off_a));
    p->inputs.push_back(std::move(vb));
    if (Sb < 0) p->inputs.push_back(int_input("offsets_b", odt, ob));
    p->sizes = {{"B", B}, {"D", D}, {"T_A", Ta}, {"T_B", Tb}};
    std::vector<TensorView> in;
    for (const Input& i : p->inputs) in.push_back(i.view);
    Concat2dJaggedBwdArgs a;
    unpack(*p, in, &a);
    if (bwd) {
      p->outputs = {{"grad_a", a.values_a.shape(), p->dtype},
                    {"grad_b", a.values_b.shape(), p->dtype}};
      return Status::Ok();
    }
    Shape shape;
    p->shape_error = concat_2d_jagged_shape(a, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    Concat2dJaggedBwdArgs a;
    unpack(p, in, &a);
    if (p.op == "concat_2d_jagged") return concat_2d_jagged(a, out[0], ctx);
    return concat_2d_jagged_bwd(a, out[0], out[1], ctx);
  }

  // The floor: every input row read once and every output row written once (a copy), offsets.
  double bytes(const Problem& p) const override {
    double total = 0;
    for (const Input& i : p.inputs)
      total += static_cast<double>(i.view.numel() * i.view.itemsize());
    for (const Output& o : p.outputs) {
      double n = 1;
      for (int64_t s : o.shape) n *= static_cast<double>(s);
      total += n * static_cast<double>(dtype_size(o.dtype));
    }
    return total;
  }

 private:
  static void unpack(const Problem& p, const std::vector<TensorView>& in,
                     Concat2dJaggedBwdArgs* a) {
    size_t i = 0;
    if (p.op == "concat_2d_jagged_bwd") a->grad = in[i++];
    a->values_a = in[i++];
    if (p.scalars.at("dense_a") == 0) a->offsets_a = in[i++];
    a->values_b = in[i++];
    if (p.scalars.at("dense_b") == 0) a->offsets_b = in[i++];
    a->n_prefix_from_right = static_cast<int64_t>(p.scalars.at("n_prefix"));
    a->is_replace = p.scalars.at("replace") != 0;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Concat2dJaggedDriver);

}  // namespace recops::cli
