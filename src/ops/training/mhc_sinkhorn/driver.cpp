// training/mhc_sinkhorn/driver.cpp: the `recops` CLI's driver of mhc_sinkhorn and
// mhc_sinkhorn_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (logits', [..., n, n], required), scale. args: iters
// (default 20), eps (default 1e-6), specials (boolean: matrix 1 gets a NaN logit, matrix 2 a +inf,
// matrix 3 a row of -inf, matrix 4 one -inf (a zero probability), where those matrices exist).
#include <limits>

#include "ops/training/common/case_args.h"
#include "ops/training/mhc_sinkhorn/mhc_sinkhorn.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

void put_specials(const TensorView& l, int64_t n) {
  const int64_t nn = n * n, tokens = nn == 0 ? 0 : l.numel() / nn;
  const double inf = std::numeric_limits<double>::infinity();
  visit_floating(l.dtype, [&](auto t) {
    using T = decltype(t);
    T* pl = static_cast<T*>(l.data);
    if (tokens > 1) pl[1 * nn + nn / 2] = from_double<T>(std::numeric_limits<double>::quiet_NaN());
    if (tokens > 2) pl[2 * nn] = from_double<T>(inf);
    if (tokens > 3)
      for (int64_t j = 0; j < n; ++j) pl[3 * nn + j] = from_double<T>(-inf);
    if (tokens > 4) pl[4 * nn + nn - 1] = from_double<T>(-inf);
  });
}

class MhcSinkhornDriver final : public FixedDriver {
 public:
  MhcSinkhornDriver()
      : FixedDriver({.ops = {"mhc_sinkhorn", "mhc_sinkhorn_bwd"},
                     .folder = "training/mhc_sinkhorn",
                     .fields = {"shape", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"iters", ArgKind::integer},
                              {"eps", ArgKind::number},
                              {"specials", ArgKind::boolean}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p, "logits', [..., n, n]"));
    const Shape& shape = *cs.shape;
    const bool bwd = row.op == "mhc_sinkhorn_bwd";
    p->scalars["iters"] = number(cs, "iters", 20);
    p->scalars["eps"] = number(cs, "eps", 1e-6);
    p->inputs.clear();
    if (bwd) p->inputs.push_back(data_input("dP", p->dtype, shape, cs.seed + 1, 1.0));
    p->inputs.push_back(data_input("logits", p->dtype, shape, cs.seed, cs.scale));
    const int64_t n = shape.empty() ? 0 : shape.back();
    if (flag(cs, "specials", false) && is_floating(p->dtype))
      put_specials(p->inputs.back().view, n);
    Shape out_shape;
    p->shape_error = mhc_sinkhorn_shape(fwd_args(*p, p->inputs.back().view), &out_shape);
    if (!p->shape_error.ok()) return Status::Ok();
    const int64_t numel = p->inputs.back().view.numel();
    p->sizes = {{"tokens", n == 0 ? 0 : numel / (n * n)}, {"n", n}};
    p->outputs = {{bwd ? "dlogits" : "P", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "mhc_sinkhorn") return mhc_sinkhorn(fwd_args(p, in[0]), out[0], ctx);
    const MhcSinkhornArgs f = fwd_args(p, in[1]);
    return mhc_sinkhorn_bwd({in[0], in[1], f.iters, f.eps}, out[0], ctx);
  }

  // Every input read once, every output written once.
  double bytes(const Problem& p) const override { return io_bytes(p); }

 private:
  static MhcSinkhornArgs fwd_args(const Problem& p, const TensorView& logits) {
    return {logits, static_cast<int64_t>(p.scalars.at("iters")), p.scalars.at("eps")};
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(MhcSinkhornDriver);

}  // namespace recops::cli
