// training/mhc_post/driver.cpp: the `recops` CLI's driver of mhc_post and mhc_post_bwd: builds a
// case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (X's, [..., n, C], required; X ~ scale), scale. y
// has X's dtype, post and comb fp32 (fp64 with fp64 X). args: comb_layout (in_out, out_in;
// another name passes 2, for the refusal case), specials (boolean: NaN and ±inf in X and y),
// wrong (text: y, post or comb gets one more element in its last dim; coef: post and comb in
// bf16), for the refusal cases.
#include <limits>
#include <string>

#include "ops/training/common/case_args.h"
#include "ops/training/mhc_post/mhc_post.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;

std::string text(const CaseSpec& cs, const char* key) {
  const auto it = cs.args.find(key);
  return it == cs.args.end() ? std::string() : it->second.s;
}

// Every 7th element of `t` cycles through NaN, +inf, -inf.
void put_specials(const TensorView& t, int64_t offset) {
  const double inf = std::numeric_limits<double>::infinity();
  const double cycle[] = {std::numeric_limits<double>::quiet_NaN(), inf, -inf};
  visit_floating(t.dtype, [&](auto tag) {
    using T = decltype(tag);
    T* pt = static_cast<T*>(t.data);
    for (int64_t e = offset, k = 0; e < t.numel(); e += 7, ++k)
      pt[e] = from_double<T>(cycle[k % 3]);
  });
}

class MhcPostDriver final : public FixedDriver {
 public:
  MhcPostDriver()
      : FixedDriver({.ops = {"mhc_post", "mhc_post_bwd"},
                     .folder = "training/mhc_post",
                     .fields = {"shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"comb_layout", ArgKind::text},
                              {"specials", ArgKind::boolean},
                              {"wrong", ArgKind::text}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "X's, [..., n, C]"));
    const Shape& shape = *cs.shape;
    const bool bwd = row.op == "mhc_post_bwd";
    const std::string layout = text(cs, "comb_layout"), wrong = text(cs, "wrong");
    p->scalars["comb_layout"] = layout.empty() || layout == "in_out" ? 0
                                : layout == "out_in"                 ? 1
                                                                     : 2;
    // The other tensors' shapes from X's (placeholders when X has fewer than two dims).
    const bool ok_rank = shape.size() >= 2;
    const Shape lead = ok_rank ? Shape(shape.begin(), shape.end() - 2) : Shape{};
    const int64_t n = ok_rank ? shape[shape.size() - 2] : 1, C = ok_rank ? shape.back() : 1;
    auto with = [&](std::initializer_list<int64_t> tail, bool grow) {
      Shape s = lead;
      s.insert(s.end(), tail);
      if (grow) s.back() += 1;
      return s;
    };
    const DType cd = wrong == "coef"           ? DType::bf16
                     : p->dtype == DType::fp64 ? DType::fp64
                                               : DType::fp32;
    const uint64_t seed = cs.seed;
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("dout", p->dtype, shape, seed + 4, 1.0));
    p->inputs.push_back(data_input("X", p->dtype, shape, seed, cs.scale));
    p->inputs.push_back(data_input("y", p->dtype, with({C}, wrong == "y"), seed + 1, cs.scale));
    p->inputs.push_back(data_input("post", cd, with({n}, wrong == "post"), seed + 2, 2.0));
    p->inputs.push_back(data_input("comb", cd, with({n, n}, wrong == "comb"), seed + 3, 1.0));
    if (flag(cs, "specials", false) && is_floating(p->dtype)) {
      put_specials(p->inputs[bwd ? 1 : 0].view, 3);
      put_specials(p->inputs[bwd ? 2 : 1].view, 5);
    }
    Shape out_shape;
    p->shape_error = mhc_post_shape(fwd_args(*p, p->inputs, bwd ? 1 : 0), &out_shape);
    if (!p->shape_error.ok()) return Status::Ok();
    int64_t tokens = 1;
    for (int64_t s : lead) tokens *= s;
    p->sizes = {{"tokens", tokens}, {"n", n}, {"C", C}};
    if (!bwd) {
      p->outputs = {{"out", shape, p->dtype}};
      return Status::Ok();
    }
    p->outputs = {{"dX", shape, p->dtype},
                  {"dy", with({C}, false), p->dtype},
                  {"dpost", with({n}, false), cd},
                  {"dcomb", with({n, n}, false), cd}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "mhc_post") return mhc_post(fwd_args(p, in, 0), out[0], ctx);
    const MhcPostArgs f = fwd_args(p, in, 1);
    return mhc_post_bwd({in[0], f.X, f.y, f.post, f.comb, f.comb_layout}, out[0], out[1], out[2],
                        out[3], ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  template <class In>
  static MhcPostArgs fwd_args(const Problem& p, const std::vector<In>& in, size_t i) {
    return {view_of(in[i]), view_of(in[i + 1]), view_of(in[i + 2]), view_of(in[i + 3]),
            static_cast<MhcCombLayout>(static_cast<int64_t>(p.scalars.at("comb_layout")))};
  }
  static const TensorView& view_of(const Input& in) { return in.view; }
  static const TensorView& view_of(const TensorView& v) { return v; }
};

}  // namespace

RECOPS_REGISTER_DRIVER(MhcPostDriver);

}  // namespace recops::cli
