// jagged/jagged_index_select/driver.cpp: the `recops` CLI's driver of jagged_index_select and
// jagged_index_select_bwd: builds a case's inputs, calls the public entry, counts bytes
// (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths | offsets (seq_lengths are the offsets' steps, in
// offsets_dtype), E, row_pad (values / grad rows further apart), total_L (values rows when they
// should differ from the lengths' sum), out_shape, range, scale. args: indices (an explicit list)
// or K (that many indices drawn uniformly from [0, B) by the case seed); indices_dtype ("int32",
// default "int64"); num_rows (num_dense_output_rows when it should differ from the selected sum);
// omit_rows (true: leave num_dense_output_rows out, so the CPU entry computes it).
#include <algorithm>
#include <optional>

#include "ops/jagged/jagged_index_select/jagged_index_select.h"
#include "tools/recops/gen.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class JaggedIndexSelectDriver final : public FixedDriver {
 public:
  JaggedIndexSelectDriver()
      : FixedDriver({.ops = {"jagged_index_select", "jagged_index_select_bwd"},
                     .folder = "jagged/jagged_index_select",
                     .fields = {"lengths", "offsets", "offsets_dtype", "E", "row_pad", "total_L",
                                "out_shape", "range", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"indices", ArgKind::int_list},
                              {"K", ArgKind::integer},
                              {"indices_dtype", ArgKind::text},
                              {"num_rows", ArgKind::integer},
                              {"omit_rows", ArgKind::boolean}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    const bool bwd = row.op == "jagged_index_select_bwd";
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    Input off;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &off, &p->offsets));
    if (p->offsets.empty()) return case_error(row, "needs at least one offset");
    std::vector<int64_t> lengths;
    for (size_t b = 0; b + 1 < p->offsets.size(); ++b)
      lengths.push_back(p->offsets[b + 1] - p->offsets[b]);
    const auto B = static_cast<int64_t>(lengths.size());
    std::vector<int64_t> idx;
    if (const auto it = cs.args.find("indices"); it != cs.args.end()) {
      idx = it->second.list;
    } else if (const auto k = cs.args.find("K"); k != cs.args.end()) {
      if (B == 0 && k->second.i > 0) return case_error(row, "K > 0 needs B > 0");
      for (int64_t i = 0; i < k->second.i; ++i)
        idx.push_back(
            static_cast<int64_t>(tensor_seed(cs.seed, 1000 + i) % static_cast<uint64_t>(B)));
    } else {
      return case_error(row, "needs args `indices` or `K`");
    }
    DType idx_dtype = DType::int64;
    if (const auto it = cs.args.find("indices_dtype"); it != cs.args.end()) {
      if (it->second.s != "int32" && it->second.s != "int64")
        return case_error(row, "indices_dtype must be int32 or int64");
      idx_dtype = it->second.s == "int32" ? DType::int32 : DType::int64;
    }
    int64_t selected = 0;
    for (int64_t i : idx) selected += (i >= 0 && i < B) ? std::max<int64_t>(0, lengths[i]) : 0;
    int64_t rows = selected;
    if (const auto it = cs.args.find("num_rows"); it != cs.args.end()) rows = it->second.i;
    const auto omit = cs.args.find("omit_rows");
    p->scalars["rows"] = static_cast<double>(rows);
    p->scalars["omit_rows"] = omit != cs.args.end() && omit->second.b ? 1 : 0;
    const int64_t total_L = cs.total_L ? *cs.total_L : p->offsets.back();
    p->inputs.clear();
    if (bwd) {
      Input g;
      RECOPS_RETURN_IF_ERROR(
          make_rowpadded_input(row, "grad", p->dtype, {rows}, cs.E, cs.row_pad, 2, &g));
      p->inputs.push_back(std::move(g));
    }
    Input values;
    RECOPS_RETURN_IF_ERROR(
        make_rowpadded_input(row, "values", p->dtype, {total_L}, cs.E, cs.row_pad, 1, &values));
    p->inputs.push_back(std::move(values));
    p->inputs.push_back(int_input("seq_lengths", row.offsets_dtype, lengths));
    p->inputs.push_back(int_input("indices", idx_dtype, idx));
    int64_t D = 1;
    for (int64_t e : cs.E) D *= e;
    p->sizes = {{"B", B},
                {"K", static_cast<int64_t>(idx.size())},
                {"D", D},
                {"total_L", total_L},
                {"rows", rows}};
    if (bwd) {
      p->outputs = {
          {"grad_values", cs.out_shape ? *cs.out_shape : p->inputs[1].view.shape(), p->dtype}};
      return Status::Ok();
    }
    Shape shape, lshape;
    p->shape_error = jagged_index_select_shape(fwd_args(*p, views(p->inputs)), &shape, &lshape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}, {"out_lengths", lshape, row.offsets_dtype}};
    return Status::Ok();
  }

  static JaggedIndexSelectArgs fwd_args(const Problem& p, const std::vector<TensorView>& in) {
    std::optional<int64_t> rows;
    if (p.scalars.at("omit_rows") == 0) rows = static_cast<int64_t>(p.scalars.at("rows"));
    return {in[0], in[1], in[2], rows};
  }
  static JaggedIndexSelectBwdArgs bwd_args(const Problem& p, const std::vector<TensorView>& in) {
    return {in[0], in[1], in[2], in[3], static_cast<int64_t>(p.scalars.at("rows"))};
  }

  size_t workspace_bytes(const Problem& p, const std::vector<TensorView>& in,
                         const std::vector<TensorView>&) const override {
    if (p.op == "jagged_index_select") return jagged_index_select_workspace_bytes(fwd_args(p, in));
    return jagged_index_select_bwd_workspace_bytes(bwd_args(p, in));
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    if (p.op == "jagged_index_select")
      return jagged_index_select(fwd_args(p, in), out[0], out[1], ctx);
    return jagged_index_select_bwd(bwd_args(p, in), out[0], ctx);
  }

  // Forward: the selected rows read and written, lengths, indices and out_lengths once.
  // Backward: grad read once, grad_values written once, lengths and indices once.
  double bytes(const Problem& p) const override {
    const bool bwd = p.op == "jagged_index_select_bwd";
    const TensorView& v = p.inputs[bwd ? 1 : 0].view;
    const double row = static_cast<double>(v.inner_numel(1) * v.itemsize());
    const double rows = p.scalars.at("rows");
    const TensorView& len = p.inputs[bwd ? 2 : 1].view;
    const TensorView& idx = p.inputs[bwd ? 3 : 2].view;
    const double ints = static_cast<double>(len.numel() * len.itemsize() +
                                            idx.numel() * (idx.itemsize() + len.itemsize()));
    return (bwd ? rows + static_cast<double>(v.sizes[0]) : 2 * rows) * row + ints;
  }
};

}  // namespace

RECOPS_REGISTER_DRIVER(JaggedIndexSelectDriver);

}  // namespace recops::cli
