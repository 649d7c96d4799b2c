// ops/jagged/common/driver_permute.cpp: the permute ops' CLI driver (driver_permute.h).
#include "ops/jagged/common/driver_permute.h"

#include <numeric>

#include "ops/jagged/common/permute_api.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {
const char* op_of(bool two_d) {
  return two_d ? "permute_2D_sparse_data" : "permute_1D_sparse_data";
}

PermuteSparseDataArgs args_of(const Problem& p, const std::vector<TensorView>& in) {
  PermuteSparseDataArgs a;
  a.permute = in[0];
  a.lengths = in[1];
  a.values = in[2];
  if (p.scalars.at("weights") != 0) a.weights = in[3];
  if (p.scalars.at("omit_rows") == 0)
    a.permuted_lengths_sum = static_cast<int64_t>(p.scalars.at("rows"));
  return a;
}
}  // namespace

PermuteDriver::PermuteDriver(bool two_d)
    : FixedDriver({.ops = {op_of(two_d)},
                   .folder = std::string("jagged/") + op_of(two_d),
                   .fields = {"lengths", "offsets", "offsets_dtype", "total_L", "E", "row_pad",
                              "range", "scale"},
                   .dtype = DType::fp32,
                   .args = {{"B", ArgKind::integer},
                            {"T", ArgKind::integer},
                            {"permute", ArgKind::int_list},
                            {"P", ArgKind::integer},
                            {"shuffle", ArgKind::boolean},
                            {"permute_dtype", ArgKind::text},
                            {"weights", ArgKind::boolean},
                            {"num_rows", ArgKind::integer},
                            {"omit_rows", ArgKind::boolean},
                            {"bump_length", ArgKind::integer}}}),
      two_d_(two_d) {}

Status PermuteDriver::make(const CaseRow& row, Problem* p) const {
  const CaseSpec& cs = *row.spec;
  RECOPS_RETURN_IF_ERROR(begin_make(row, p));
  const auto arg = [&](const char* k) {
    const auto it = cs.args.find(k);
    return it == cs.args.end() ? nullptr : &it->second;
  };
  Input off;
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
  std::vector<int64_t> lengths;
  for (size_t s = 0; s + 1 < p->offsets.size(); ++s)
    lengths.push_back(p->offsets[s + 1] - p->offsets[s]);
  const auto n = static_cast<int64_t>(lengths.size());
  int64_t B = 1, T = n;
  if (two_d_) {
    if (!arg("B") || arg("B")->i < 0) return case_error(row, "needs args `B` >= 0");
    B = arg("B")->i;
    if (B == 0 && n != 0) return case_error(row, "B = 0 needs no lengths");
    if (B > 0 && n % B != 0) return case_error(row, "the lengths' count must be a multiple of B");
    T = B > 0 ? n / B : (arg("T") ? arg("T")->i : 0);
  }
  if (const auto* v = arg("bump_length")) {
    if (v->i < 0 || v->i >= n) return case_error(row, "bump_length out of range");
    ++lengths[static_cast<size_t>(v->i)];
  }
  std::vector<int64_t> perm;
  if (const auto* v = arg("permute")) {
    perm = v->list;
  } else if (arg("shuffle") && arg("shuffle")->b) {
    perm.resize(static_cast<size_t>(T));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    for (int64_t i = T - 1; i > 0; --i)
      std::swap(perm[static_cast<size_t>(i)],
                perm[tensor_seed(cs.seed, 2000 + i) % static_cast<uint64_t>(i + 1)]);
  } else if (const auto* k = arg("P")) {
    if (T <= 0 && k->i > 0) return case_error(row, "P > 0 needs T >= 1");
    for (int64_t i = 0; i < k->i; ++i)
      perm.push_back(
          static_cast<int64_t>(tensor_seed(cs.seed, 1000 + i) % static_cast<uint64_t>(T)));
  } else {
    return case_error(row, "needs args `permute`, `P` or `shuffle`");
  }
  DType perm_dtype = DType::int64;
  if (const auto* v = arg("permute_dtype")) {
    if (v->s != "int32" && v->s != "int64")
      return case_error(row, "permute_dtype must be int32 or int64");
    perm_dtype = v->s == "int32" ? DType::int32 : DType::int64;
  }
  int64_t rows = 0;
  for (int64_t t : perm)
    for (int64_t b = 0; t >= 0 && t < T && b < B; ++b)
      rows += std::max<int64_t>(0, lengths[static_cast<size_t>(t * B + b)]);
  if (const auto* v = arg("num_rows")) rows = v->i;
  const bool weights = arg("weights") && arg("weights")->b;
  p->scalars["rows"] = static_cast<double>(rows);
  p->scalars["omit_rows"] = arg("omit_rows") && arg("omit_rows")->b ? 1 : 0;
  p->scalars["weights"] = weights ? 1 : 0;
  const int64_t total = cs.total_L ? *cs.total_L : p->offsets.back();
  p->inputs.clear();
  p->inputs.push_back(int_input("permute", perm_dtype, perm));
  p->inputs.push_back(
      int_input("lengths", row.offsets_dtype, lengths, two_d_ ? Shape{T, B} : Shape{n}));
  Input values;
  RECOPS_RETURN_IF_ERROR(
      make_rowpadded_input(row, "values", p->dtype, {total}, cs.E, cs.row_pad, 1, &values));
  p->inputs.push_back(std::move(values));
  if (weights)
    p->inputs.push_back(data_input("weights", DType::fp32, {total}, tensor_seed(cs.seed, 3), 1.0));
  p->sizes = {
      {"T", T}, {"B", B}, {"P", static_cast<int64_t>(perm.size())}, {"N", total}, {"R", rows}};
  Shape ls, vs;
  const PermuteSparseDataArgs a = args_of(*p, views(p->inputs));
  p->shape_error = two_d_ ? permute_2D_sparse_data_shape(a, &ls, &vs)
                          : permute_1D_sparse_data_shape(a, &ls, &vs);
  if (!p->shape_error.ok()) return Status::Ok();
  p->outputs = {{"permuted_lengths", ls, row.offsets_dtype}, {"permuted_values", vs, p->dtype}};
  if (weights) p->outputs.push_back({"permuted_weights", {vs[0]}, DType::fp32});
  return Status::Ok();
}

size_t PermuteDriver::workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                                      const std::vector<TensorView>&) const {
  const PermuteSparseDataArgs a = args_of(p, in);
  return two_d_ ? permute_2D_sparse_data_workspace_bytes(a)
                : permute_1D_sparse_data_workspace_bytes(a);
}

Status PermuteDriver::run(const Problem& p, const std::vector<TensorView>& in,
                          const std::vector<TensorView>& out, const Context& ctx) const {
  const PermuteSparseDataArgs a = args_of(p, in);
  const TensorView* w = out.size() > 2 ? &out[2] : nullptr;
  return two_d_ ? permute_2D_sparse_data(a, out[0], out[1], w, ctx)
                : permute_1D_sparse_data(a, out[0], out[1], w, ctx);
}

}  // namespace recops::cli
