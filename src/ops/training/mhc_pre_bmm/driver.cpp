// training/mhc_pre_bmm/driver.cpp: the `recops` CLI's driver of mhc_pre_bmm and
// mhc_pre_bmm_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (X's, [..., n, C], required; X ~ scale), out_dtype
// (y's and dy's, default fp32), scale. h_pre is fp32 (fp64 with fp64 X). args: specials (boolean:
// NaN and ±inf in X), wrong (text: h_pre gets one more element in its last dim; coef: h_pre in
// bf16), for the refusal cases.
#include <limits>
#include <string>

#include "ops/training/common/case_args.h"
#include "ops/training/mhc_pre_bmm/mhc_pre_bmm.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;

class MhcPreBmmDriver final : public FixedDriver {
 public:
  MhcPreBmmDriver()
      : FixedDriver({.ops = {"mhc_pre_bmm", "mhc_pre_bmm_bwd"},
                     .folder = "training/mhc_pre_bmm",
                     .fields = {"shape", "out_dtype", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"specials", ArgKind::boolean}, {"wrong", ArgKind::text}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "X's, [..., n, C]"));
    const Shape& shape = *cs.shape;
    const bool bwd = row.op == "mhc_pre_bmm_bwd";
    const auto w = cs.args.find("wrong");
    const std::string wrong = w == cs.args.end() ? std::string() : w->second.s;
    const DType y_dtype = row.out_dtype.value_or(DType::fp32);
    p->scalars["y_dtype"] = static_cast<double>(static_cast<int>(y_dtype));
    // h_pre's and y's shapes from X's (placeholders when X has fewer than two dims).
    const bool ok_rank = shape.size() >= 2;
    Shape h_shape = ok_rank ? Shape(shape.begin(), shape.end() - 1) : Shape{1};
    Shape y_shape = ok_rank ? Shape(shape.begin(), shape.end() - 2) : Shape{};
    y_shape.push_back(ok_rank ? shape.back() : 1);
    if (wrong == "h_pre") h_shape.back() += 1;
    const DType cd = wrong == "coef"           ? DType::bf16
                     : p->dtype == DType::fp64 ? DType::fp64
                                               : DType::fp32;
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("dy", y_dtype, y_shape, cs.seed + 2, 1.0));
    p->inputs.push_back(data_input("h_pre", cd, h_shape, cs.seed + 1, 2.0));
    p->inputs.push_back(data_input("X", p->dtype, shape, cs.seed, cs.scale));
    if (flag(cs, "specials", false) && is_floating(p->dtype)) {
      const TensorView& x = p->inputs.back().view;
      const double inf = std::numeric_limits<double>::infinity();
      const double cycle[] = {std::numeric_limits<double>::quiet_NaN(), inf, -inf};
      visit_floating(x.dtype, [&](auto tag) {
        using T = decltype(tag);
        T* px = static_cast<T*>(x.data);
        for (int64_t e = 2, k = 0; e < x.numel(); e += 7, ++k) px[e] = from_double<T>(cycle[k % 3]);
      });
    }
    Shape out_shape;
    DType out_dtype;
    p->shape_error =
        mhc_pre_bmm_shape(fwd_args(*p, views(p->inputs), bwd ? 1 : 0), &out_shape, &out_dtype);
    if (!p->shape_error.ok()) return Status::Ok();
    int64_t tokens = 1;
    for (size_t d = 0; d + 2 < shape.size(); ++d) tokens *= shape[d];
    p->sizes = {{"tokens", tokens}, {"n", shape[shape.size() - 2]}, {"C", shape.back()}};
    if (bwd)
      p->outputs = {{"dh_pre", h_shape, cd}, {"dX", shape, p->dtype}};
    else
      p->outputs = {{"y", y_shape, y_dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "mhc_pre_bmm") return mhc_pre_bmm(fwd_args(p, in, 0), out[0], ctx);
    const MhcPreBmmArgs f = fwd_args(p, in, 1);
    return mhc_pre_bmm_bwd({in[0], f.h_pre, f.X, f.out_dtype}, out[0], out[1], ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  static MhcPreBmmArgs fwd_args(const Problem& p, const std::vector<TensorView>& in, size_t i) {
    return {in[i], in[i + 1], static_cast<DType>(static_cast<int>(p.scalars.at("y_dtype")))};
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(MhcPreBmmDriver);

}  // namespace recops::cli
