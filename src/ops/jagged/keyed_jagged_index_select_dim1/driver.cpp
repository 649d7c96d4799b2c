// jagged/keyed_jagged_index_select_dim1/driver.cpp: the `recops` CLI's driver of
// keyed_jagged_index_select_dim1 and its _bwd: builds a case's inputs, calls the public entry,
// counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths | offsets (the num_keys * batch_size segments,
// key-major; offsets_dtype for both lengths and offsets), total_L (values elements when they
// should differ), out_shape, range, scale. args: batch_size (required); indices (a list) or K
// (drawn from [0, batch_size) by the case seed); indices_dtype ("int32" | "int64"); weights
// (true: an fp32 weights input); num_rows (selected_lengths_sum when it should differ);
// omit_rows (true: leave it out, so the CPU entry computes it); bump_length (that lengths entry
// + 1, so offsets are no longer its cumsum).
#include <algorithm>
#include <optional>

#include "ops/jagged/keyed_jagged_index_select_dim1/keyed_jagged_index_select_dim1.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
constexpr const char* kOp = "keyed_jagged_index_select_dim1";

class KeyedJaggedIndexSelectDim1Driver final : public FixedDriver {
 public:
  KeyedJaggedIndexSelectDim1Driver()
      : FixedDriver({.ops = {kOp, "keyed_jagged_index_select_dim1_bwd"},
                     .folder = "jagged/keyed_jagged_index_select_dim1",
                     .fields = {"lengths", "offsets", "offsets_dtype", "total_L", "out_shape",
                                "range", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"batch_size", ArgKind::integer},
                              {"indices", ArgKind::int_list},
                              {"K", ArgKind::integer},
                              {"indices_dtype", ArgKind::text},
                              {"weights", ArgKind::boolean},
                              {"num_rows", ArgKind::integer},
                              {"omit_rows", ArgKind::boolean},
                              {"bump_length", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op != kOp;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    const auto arg = [&](const char* k) {
      const auto it = cs.args.find(k);
      return it == cs.args.end() ? nullptr : &it->second;
    };
    if (!arg("batch_size")) return case_error(row, "needs args `batch_size`");
    const int64_t B = arg("batch_size")->i;
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    off.name = "offsets";
    std::vector<int64_t> lengths;
    for (size_t s = 0; s + 1 < p->offsets.size(); ++s)
      lengths.push_back(p->offsets[s + 1] - p->offsets[s]);
    if (const auto* v = arg("bump_length")) {
      if (v->i < 0 || v->i >= static_cast<int64_t>(lengths.size()))
        return case_error(row, "bump_length out of range");
      ++lengths[static_cast<size_t>(v->i)];
    }
    std::vector<int64_t> idx;
    if (const auto* v = arg("indices")) {
      idx = v->list;
    } else if (const auto* k = arg("K")) {
      if (B <= 0) return case_error(row, "K needs batch_size >= 1");
      for (int64_t i = 0; i < k->i; ++i)
        idx.push_back(
            static_cast<int64_t>(tensor_seed(cs.seed, 1000 + i) % static_cast<uint64_t>(B)));
    } else {
      return case_error(row, "needs args `indices` or `K`");
    }
    DType idx_dtype = DType::int64;
    if (const auto* v = arg("indices_dtype")) {
      if (v->s != "int32" && v->s != "int64")
        return case_error(row, "indices_dtype must be int32 or int64");
      idx_dtype = v->s == "int32" ? DType::int32 : DType::int64;
    }
    const int64_t F = B > 0 ? static_cast<int64_t>(lengths.size()) / B : 0;
    int64_t rows = 0;
    for (int64_t f = 0; f < F; ++f)
      for (int64_t i : idx)
        if (i >= 0 && i < B) rows += std::max<int64_t>(0, lengths[static_cast<size_t>(f * B + i)]);
    if (const auto* v = arg("num_rows")) rows = v->i;
    const bool weights = arg("weights") && arg("weights")->b;
    p->scalars["batch_size"] = static_cast<double>(B);
    p->scalars["rows"] = static_cast<double>(rows);
    p->scalars["omit_rows"] = arg("omit_rows") && arg("omit_rows")->b ? 1 : 0;
    p->scalars["weights"] = weights ? 1 : 0;
    const int64_t total = cs.total_L ? *cs.total_L : p->offsets.back();
    p->inputs.clear();
    if (bwd)
      p->inputs.push_back(data_input("grad", p->dtype, {rows}, tensor_seed(cs.seed, 2), cs.scale));
    Input values;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values", p->dtype, {total}, {}, 0, 1, &values));
    p->inputs.push_back(std::move(values));
    p->inputs.push_back(int_input("lengths", row.offsets_dtype, lengths));
    p->inputs.push_back(std::move(off));
    p->inputs.push_back(int_input("indices", idx_dtype, idx));
    if (weights)
      p->inputs.push_back(
          data_input("weights", DType::fp32, {total}, tensor_seed(cs.seed, 3), 1.0));
    p->sizes = {
        {"F", F}, {"B", B}, {"K", static_cast<int64_t>(idx.size())}, {"total", total}, {"R", rows}};
    if (bwd) {
      p->outputs = {{"grad_values", cs.out_shape ? *cs.out_shape : Shape{total}, p->dtype}};
      return Status::Ok();
    }
    Shape shape, lshape;
    p->shape_error =
        keyed_jagged_index_select_dim1_shape(fwd_args(*p, views(p->inputs)), &shape, &lshape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}, {"out_lengths", lshape, row.offsets_dtype}};
    if (weights) p->outputs.push_back({"out_weights", shape, DType::fp32});
    return Status::Ok();
  }

  static KeyedJaggedIndexSelectDim1Args fwd_args(const Problem& p,
                                                 const std::vector<TensorView>& in) {
    KeyedJaggedIndexSelectDim1Args a{
        in[0],        in[1],       in[2], in[3], static_cast<int64_t>(p.scalars.at("batch_size")),
        std::nullopt, std::nullopt};
    if (p.scalars.at("weights") != 0) a.weights = in[4];
    if (p.scalars.at("omit_rows") == 0)
      a.selected_lengths_sum = static_cast<int64_t>(p.scalars.at("rows"));
    return a;
  }
  static KeyedJaggedIndexSelectDim1BwdArgs bwd_args(const Problem& p,
                                                    const std::vector<TensorView>& in) {
    return {in[0],        in[1],       in[2],
            in[3],        in[4],       static_cast<int64_t>(p.scalars.at("batch_size")),
            std::nullopt, std::nullopt};
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.op == kOp) return keyed_jagged_index_select_dim1_workspace_bytes(fwd_args(p, in));
    return keyed_jagged_index_select_dim1_bwd_workspace_bytes(bwd_args(p, in));
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == kOp)
      return keyed_jagged_index_select_dim1(fwd_args(p, in), out[0], out[1],
                                            out.size() > 2 ? &out[2] : nullptr, ctx);
    return keyed_jagged_index_select_dim1_bwd(bwd_args(p, in), out[0], ctx);
  }

  // Every input and output once (the selected values and weights are read once each).
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(KeyedJaggedIndexSelectDim1Driver);

}  // namespace recops::cli
