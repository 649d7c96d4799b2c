// training/mhc_sinkhorn/driver.cpp: the `recops` CLI's driver of mhc_sinkhorn and
// mhc_sinkhorn_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: shape (logits', [..., n, n], required), scale. args: iters
// (default 20), eps (default 1e-6), specials (boolean: matrix 1 gets a NaN logit, matrix 2 a +inf,
// matrix 3 a row of -inf, matrix 4 one -inf (a zero probability), where those matrices exist).
//
// Judging: the forward by the file's `single` standard; the backward by `single` with this op's
// documented `small` (README "Accuracy"): per element, small_i = max(S_i, p_i·M_t), S_i = sum over
// q of |dlogits_i(dP masked to position q)|, the magnitude of the terms whose sum is dlogits_i
// (dlogits is linear in dP, so the golden run once per position q of the n x n matrix gives them),
// and p_i·M_t the softmax at i times the token's largest |dlogits / p| (the adjoint's scale).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "ops/training/common/case_args.h"
#include "ops/training/mhc_sinkhorn/mhc_sinkhorn.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"
#include "tools/recops/judge.h"

namespace recops::cli {
namespace {
using training_args::flag;
using training_args::number;

// A double with 9 significant digits (the judgement's messages).
std::string fmt_g(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

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

  // mhc_sinkhorn_bwd only (the forward: std::nullopt, the file's standard). accuracy.md's
  // `single` with small_i = max(S_i, p_i M_t, smallest normal x rms(gold)): |gold_i| >= small_i
  // needs rel_i <= 10 T (and mean rel <= T over those); |gold_i| < small_i needs |out_i - gold_i|
  // <= T small_i. Poisoned and non-finite elements as judge.cpp.
  std::optional<Judgement> judge_outputs(const Problem& p, const std::vector<Tensor>& out,
                                         const std::vector<Tensor>& gold) const override {
    if (p.op != "mhc_sinkhorn_bwd") return std::nullopt;
    Judgement j;
    const DType t = gold[0].dtype();
    const int64_t numel = gold[0].numel();
    const Shape& shape = p.outputs[0].shape;
    const int64_t n = shape.empty() ? 0 : shape.back(), nn = n * n;
    auto fail = [&](int64_t i, const std::string& why) {
      ++j.mismatched;
      if (j.pass) j.detail = "dlogits: element " + std::to_string(i) + ": " + why;
      j.pass = false;
    };
    // S: the golden of dP restricted to one position q of every matrix, summed in magnitude.
    std::vector<double> S(static_cast<size_t>(numel), 0.0);
    if (numel > 0) {
      const std::vector<TensorView> in = views(p.inputs);  // dP, logits
      const int64_t es = dtype_size(t);
      Tensor dq = Tensor::empty(shape, t), fq = Tensor::empty(shape, t);
      Context ctx;
      ctx.impl = "reference";
      for (int64_t q = 0; q < nn; ++q) {
        std::memset(dq.data(), 0, static_cast<size_t>(numel * es));
        for (int64_t e = q; e < numel; e += nn)
          std::memcpy(static_cast<char*>(dq.data()) + e * es,
                      static_cast<const char*>(in[0].data) + e * es, static_cast<size_t>(es));
        const MhcSinkhornArgs f = fwd_args(p, in[1]);
        if (Status st = mhc_sinkhorn_bwd({dq.view(), in[1], f.iters, f.eps}, fq.view(), ctx);
            !st.ok()) {
          fail(0, "the golden of the terms failed: " + st.message());
          return j;
        }
        for (int64_t e = 0; e < numel; ++e)
          S[static_cast<size_t>(e)] +=
              std::fabs(load_value(static_cast<const char*>(fq.data()) + e * es, t));
      }
    }
    // p·M: p_i the softmax (fp64) of the logits at element i, M_t the token's largest
    // |gold_k| / p_k: the scale of the adjoint at the softmax step (dlogits = p·(g - <g, p>)),
    // whose rounding errors reach element i multiplied by p_i.
    std::vector<double> pm(static_cast<size_t>(numel), 0.0);
    {
      const std::vector<TensorView> in = views(p.inputs);
      const auto* pl = static_cast<const char*>(in[1].data);
      const auto* pgold = static_cast<const char*>(gold[0].data());
      const int64_t es = dtype_size(t);
      std::vector<double> sm(static_cast<size_t>(nn));
      for (int64_t base = 0; base < numel; base += nn) {
        for (int64_t r = 0; r < n; ++r) {
          double mx = -INFINITY, z = 0;
          for (int64_t c = 0; c < n; ++c)
            mx = std::fmax(mx, load_value(pl + (base + r * n + c) * es, t));
          for (int64_t c = 0; c < n; ++c)
            z += sm[static_cast<size_t>(r * n + c)] =
                std::exp(load_value(pl + (base + r * n + c) * es, t) - mx);
          for (int64_t c = 0; c < n; ++c) sm[static_cast<size_t>(r * n + c)] /= z;
        }
        double M = 0;
        for (int64_t k = 0; k < nn; ++k) {
          const double pk = sm[static_cast<size_t>(k)], gk = load_value(pgold + (base + k) * es, t);
          if (pk > 0 && std::isfinite(gk)) M = std::fmax(M, std::fabs(gk) / pk);
        }
        for (int64_t k = 0; k < nn; ++k) {
          const double v = sm[static_cast<size_t>(k)] * M;
          pm[static_cast<size_t>(base + k)] = std::isfinite(v) ? v : 0.0;
        }
      }
    }
    const auto* po = static_cast<const char*>(out[0].data());
    const auto* pg = static_cast<const char*>(gold[0].data());
    const int64_t es = dtype_size(t);
    double ss = 0;
    int64_t cnt = 0;
    for (int64_t i = 0; i < numel; ++i) {
      const double g = load_value(pg + i * es, t);
      if (std::isfinite(g)) ss += g * g, ++cnt;
    }
    double magnitude = cnt ? std::sqrt(ss / static_cast<double>(cnt)) : 1.0;
    if (!(magnitude > 0)) magnitude = 1.0;
    const double T = core::threshold(t), floor = core::smallest_normal(t) * magnitude;
    const uint64_t poison = poison_bits(t, 0);
    double rel_sum = 0;
    int64_t rel_count = 0;
    for (int64_t i = 0; i < numel; ++i) {
      uint64_t ob = 0;
      std::memcpy(&ob, po + i * es, static_cast<size_t>(es));
      if (ob == poison) {
        ++j.unwritten;
        fail(i, "not written (still holds the poison)");
        continue;
      }
      const double o = load_value(po + i * es, t), g = load_value(pg + i * es, t);
      if (!std::isfinite(g) || !std::isfinite(o)) {
        if (!((std::isnan(g) && std::isnan(o)) || o == g)) {
          ++j.nonfinite;
          fail(i, "got " + std::to_string(o) + ", expected " + std::to_string(g));
        }
        continue;
      }
      const double d = std::fabs(o - g);
      j.max_abs = std::max(j.max_abs, d);
      const double Si = S[static_cast<size_t>(i)];
      const double small =
          std::max({std::isfinite(Si) ? Si : 0.0, pm[static_cast<size_t>(i)], floor});
      if (std::fabs(g) < small) {
        if (d > T * small)
          fail(i, "abs error " + fmt_g(d) + " > T*small_i (small_i " + fmt_g(small) + ")");
      } else {
        const double rel = d / std::fabs(g);
        rel_sum += rel, ++rel_count;
        j.max_rel = std::max(j.max_rel, rel);
        if (rel > 10 * T)
          fail(i, "rel error " + fmt_g(rel) + " > 10*T (got " + fmt_g(o) + ", expected " +
                      fmt_g(g) + ")");
      }
    }
    j.mean_rel = rel_count ? rel_sum / static_cast<double>(rel_count) : 0.0;
    if (j.mean_rel > T) {
      j.pass = false;
      if (j.detail.empty()) j.detail = "dlogits: mean rel error " + fmt_g(j.mean_rel) + " > T";
    }
    if (!j.pass)
      j.detail += " (" + std::to_string(j.mismatched) + " mismatched, " +
                  std::to_string(j.unwritten) + " unwritten, " + std::to_string(j.nonfinite) +
                  " non-finite)";
    return j;
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
