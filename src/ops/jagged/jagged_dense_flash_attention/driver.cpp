// jagged/jagged_dense_flash_attention/driver.cpp: the `recops` CLI's driver of
// jagged_dense_flash_attention, its _fwd (out, lse) and its _bwd: builds a case's inputs, calls the
// public entry, counts bytes and FLOPs (tools/recops/driver.h). Judged by the double standard
// (baseline: the reference's plain same-precision mode).
//
// Case fields beyond the common ones: lengths | offsets, offsets_dtype, offsets_shape,
// max_seq_len (required), total_L (q/v rows when they should differ from offsets[B]), row_pad
// (q and v rows D + row_pad apart), out_shape (a wrong first output), scale.
// args: D (8), T (5), S (attn_bias rows; default max_seq_len), allow_tf32, k_transposed (k a
// transposed view of a [B, T, D] buffer), k_batch (k's B, for refusals), neg_bias_cols (columns
// t < neg_bias_cols get bias -1e4 on every row), score_scale (q and k are scaled so that a typical
// |s| is about this; default about 0.5).
//
// The backward's out and lse are the reference forward's on the case's q, k, v, attn_bias.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/scalar.h"
#include "ops/jagged/common/jagged_case.h"
#include "ops/jagged/jagged_dense_flash_attention/jagged_dense_flash_attention.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
constexpr const char* kOp = "jagged_dense_flash_attention";
constexpr const char* kFwd = "jagged_dense_flash_attention_fwd";
constexpr const char* kBwd = "jagged_dense_flash_attention_bwd";

using jagged_case::bool_arg;
using jagged_case::int_arg;

void scale_data(Input* in, double f) {
  visit_floating(in->view.dtype, [&](auto t) {
    using T = decltype(t);
    T* d = static_cast<T*>(in->buf.data());
    for (int64_t i = 0; i < in->buf.numel(); ++i) d[i] = from_double<T>(to_double(d[i]) * f);
  });
}

class Driver_ final : public FixedDriver {
 public:
  Driver_()
      : FixedDriver({.ops = {kOp, kFwd, kBwd},
                     .folder = "jagged/jagged_dense_flash_attention",
                     .fields = jagged_case::fields({"range"}),
                     .dtype = DType::fp32,
                     .args = {{"D", ArgKind::integer},
                              {"T", ArgKind::integer},
                              {"S", ArgKind::integer},
                              {"allow_tf32", ArgKind::boolean},
                              {"k_transposed", ArgKind::boolean},
                              {"k_batch", ArgKind::integer},
                              {"neg_bias_cols", ArgKind::integer},
                              {"score_scale", ArgKind::number}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    const bool bwd = row.op == kBwd;
    RECOPS_RETURN_IF_ERROR(jagged_case::take_max_seq_len(row, p));
    const int64_t D = int_arg(cs, "D", 8), T = int_arg(cs, "T", 5);
    const int64_t S = int_arg(cs, "S", p->max_seq_len);
    p->scalars["allow_tf32"] = bool_arg(cs, "allow_tf32") ? 1 : 0;
    Input off;
    int64_t total_L = 0;
    RECOPS_RETURN_IF_ERROR(jagged_case::offsets_and_total(row, p, &off, &total_L));
    const int64_t B = int_arg(cs, "k_batch", std::max<int64_t>(0, off.view.numel() - 1));
    Input q, v;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "q", p->dtype, {total_L}, {D}, cs.row_pad, 1, &q));
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "v", p->dtype, {total_L}, {D}, cs.row_pad, 3, &v));
    Input k = jagged_case::dense_input(cs, "k", p->dtype, B, D, T, bool_arg(cs, "k_transposed"), 2);
    Input bias = data_input("attn_bias", p->dtype, {B, S, T}, tensor_seed(cs.seed, 4), cs.scale);
    // q . k has standard deviation about sqrt(D)/3 for uniform(-1, 1) data: scale q and k by a
    // power of two each so that |s| is about score_scale.
    const auto ss = cs.args.find("score_scale");
    const double target = ss == cs.args.end() ? 0.5 : ss->second.f;
    const double f = std::exp2(std::round(
        0.5 * std::log2(target * 3.0 / std::sqrt(static_cast<double>(std::max<int64_t>(D, 1))))));
    scale_data(&q, f);
    scale_data(&k, f);
    if (const int64_t nc = int_arg(cs, "neg_bias_cols", 0); nc > 0) {
      visit_floating(p->dtype, [&](auto t) {
        using Tp = decltype(t);
        Tp* d = static_cast<Tp*>(bias.buf.data());
        for (int64_t b = 0; b < B; ++b)
          for (int64_t l = 0; l < S; ++l)
            for (int64_t c = 0; c < std::min(nc, T); ++c)
              d[(b * S + l) * T + c] = from_double<Tp>(-1e4);
      });
    }
    p->inputs.clear();
    if (bwd)
      p->inputs.push_back(
          data_input("grad", p->dtype, {B, T, D}, tensor_seed(cs.seed, 5), cs.scale));
    p->inputs.push_back(std::move(q));
    p->inputs.push_back(std::move(k));
    p->inputs.push_back(std::move(v));
    p->inputs.push_back(std::move(bias));
    p->inputs.push_back(std::move(off));
    p->sizes = {{"B", B}, {"max_L", p->max_seq_len}, {"D", D}, {"T", T},
                {"S", S}, {"total_L", total_L}};
    if (cs.row_pad) p->sizes.push_back({"row_pad", cs.row_pad});
    if (bwd) {
      p->inputs.push_back(data_input("out", p->dtype, {B, T, D}, tensor_seed(cs.seed, 6), 1.0));
      Input lse = data_input("lse", DType::fp32, {B, T}, tensor_seed(cs.seed, 7), 1.0);
      p->inputs.push_back(std::move(lse));
      // out and lse: the reference forward's (left random when the forward refuses the case).
      const auto in = views(p->inputs);
      Context ctx;
      ctx.impl = "reference";
      (void)jagged_dense_flash_attention_fwd(fwd_args(*p, in, 1), in[6], in[7], ctx);
      p->outputs = {{"dq", in[1].shape(), p->dtype},
                    {"dk", in[2].shape(), p->dtype},
                    {"dv", in[3].shape(), p->dtype},
                    {"dbias", in[4].shape(), p->dtype}};
    } else {
      Shape s;
      p->shape_error = jagged_dense_flash_attention_shape(fwd_args(*p, views(p->inputs), 0), &s);
      if (!p->shape_error.ok()) return Status::Ok();
      p->outputs = {{"out", s, p->dtype}};
      if (row.op == kFwd) p->outputs.push_back({"lse", {s[0], s[1]}, DType::fp32});
    }
    if (cs.out_shape) p->outputs[0].shape = *cs.out_shape;
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == kOp) return jagged_dense_flash_attention(fwd_args(p, in, 0), out[0], ctx);
    if (p.op == kFwd)
      return jagged_dense_flash_attention_fwd(fwd_args(p, in, 0), out[0], out[1], ctx);
    return jagged_dense_flash_attention_bwd(bwd_args(p, in), out[0], out[1], out[2], out[3], ctx);
  }

  Status baseline(const Problem& p, std::vector<Tensor>* out) const override {
    *out = alloc_outputs(p, Device::cpu());
    const auto in = views(p.inputs);
    const auto o = views(*out);
    if (p.op == kBwd)
      return jagged_dense_flash_attention_bwd_plain(bwd_args(p, in), o[0], o[1], o[2], o[3]);
    Tensor lse;
    if (p.op == kOp) lse = Tensor::empty({o[0].sizes[0], o[0].sizes[1]}, DType::fp32);
    return jagged_dense_flash_attention_plain(fwd_args(p, in, 0), o[0],
                                              p.op == kOp ? lse.view() : o[1]);
  }

  // The floor (jagged_ops.md §6.1): the valid rows of q and v (and of attn_bias), k, the
  // backward's grad, out and lse, every output byte once, the offsets once.
  double bytes(const Problem& p) const override {
    const double item = static_cast<double>(dtype_size(p.dtype));
    const double valid = static_cast<double>(valid_rows(p.offsets, p.max_seq_len));
    double elems = 0, extra = 0;
    for (const Input& in : p.inputs) {
      const TensorView& v = in.view;
      if (in.name == "seq_offsets")
        extra += static_cast<double>(v.numel() * v.itemsize());
      else if (in.name == "q" || in.name == "v")
        elems += valid * static_cast<double>(v.sizes[1]);
      else if (in.name == "attn_bias")
        elems += valid * static_cast<double>(v.sizes[2]);
      else if (in.name == "lse")
        extra += static_cast<double>(v.numel() * 4);
      else
        elems += static_cast<double>(v.numel());
    }
    for (const Output& o : p.outputs) {
      double n = 1;
      for (int64_t s : o.shape) n *= static_cast<double>(s);
      if (o.dtype == DType::fp32 && o.name == "lse")
        extra += 4 * n;
      else
        elems += n;
    }
    return elems * item + extra;
  }
  // Forward 4·D·T·Σn_b; backward 2.5 times that.
  double flops(const Problem& p) const override {
    double D = 0, T = 0;
    for (const auto& [k, v] : p.sizes) {
      if (k == "D") D = static_cast<double>(v);
      if (k == "T") T = static_cast<double>(v);
    }
    const double f = 4.0 * D * T * static_cast<double>(valid_rows(p.offsets, p.max_seq_len));
    return p.op == kBwd ? 2.5 * f : f;
  }

 private:
  // q, k, v, attn_bias, seq_offsets start at in[first].
  static JaggedDenseFlashAttentionArgs fwd_args(const Problem& p, const std::vector<TensorView>& in,
                                                size_t first) {
    return {in[first],     in[first + 1], in[first + 2], in[first + 3],
            in[first + 4], p.max_seq_len, tf32(p)};
  }
  static JaggedDenseFlashAttentionBwdArgs bwd_args(const Problem& p,
                                                   const std::vector<TensorView>& in) {
    return {in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], p.max_seq_len, tf32(p)};
  }
  static bool tf32(const Problem& p) { return p.scalars.at("allow_tf32") != 0; }
};

}  // namespace

RECOPS_REGISTER_DRIVER(Driver_);

}  // namespace recops::cli
