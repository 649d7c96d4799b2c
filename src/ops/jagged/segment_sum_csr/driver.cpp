// jagged/segment_sum_csr/driver.cpp: the `recops` CLI's driver of segment_sum_csr: builds a
// case's inputs, calls the public entry, counts bytes (tools/recops/driver.h).
//
// Case fields beyond the common ones: lengths | offsets (csr_seg, in units of batch_size),
// offsets_dtype, offsets_shape, total_L (values elements when they should differ from
// csr_seg[S] * batch_size), out_shape, range (integer values), scale. args: batch_size (default 1).
#include "ops/jagged/segment_sum_csr/segment_sum_csr.h"
#include "tools/recops/inputs.h"

namespace recops::cli {
namespace {

class SegmentSumCsrDriver final : public FixedDriver {
 public:
  SegmentSumCsrDriver()
      : FixedDriver({.ops = {"segment_sum_csr"},
                     .folder = "jagged/segment_sum_csr",
                     .fields = {"lengths", "offsets", "offsets_dtype", "offsets_shape", "total_L",
                                "out_shape", "range", "scale"},
                     .dtype = DType::fp32,
                     .args = {{"batch_size", ArgKind::integer}}}) {}

  Status make(const CaseRow& row, Problem* p) const override {
    const CaseSpec& cs = *row.spec;
    RECOPS_RETURN_IF_ERROR(begin_make(row, p));
    const auto it = cs.args.find("batch_size");
    const int64_t bs = it == cs.args.end() ? 1 : it->second.i;
    Input csr;
    RECOPS_RETURN_IF_ERROR(make_offsets_input(row, &csr, &p->offsets));
    csr.name = "csr_seg";
    const int64_t last = p->offsets.empty() ? 0 : p->offsets.back();
    const int64_t N = cs.total_L ? *cs.total_L : last * bs;
    if (N < 0) return case_error(row, "values elements (total_L or csr_seg[S] * batch_size) < 0");
    Input values;
    RECOPS_RETURN_IF_ERROR(make_rowpadded_input(row, "values", p->dtype, {N}, {}, 0, 1, &values));
    p->inputs.clear();
    p->inputs.push_back(std::move(csr));
    p->inputs.push_back(std::move(values));
    p->scalars["batch_size"] = static_cast<double>(bs);
    p->sizes = {{"S", static_cast<int64_t>(p->offsets.size()) - 1}, {"bs", bs}, {"N", N}};
    Shape shape;
    p->shape_error = segment_sum_csr_shape({bs, p->inputs[0].view, p->inputs[1].view}, &shape);
    if (!p->shape_error.ok()) return Status::Ok();
    if (cs.out_shape) shape = *cs.out_shape;
    p->outputs = {{"out", shape, p->dtype}};
    return Status::Ok();
  }

  Status run(const Problem& p, const std::vector<TensorView>& in,
             const std::vector<TensorView>& out, const Context& ctx) const override {
    const auto bs = static_cast<int64_t>(p.scalars.at("batch_size"));
    return segment_sum_csr({bs, in[0], in[1]}, out[0], ctx);
  }

  // Every input and output once (every value belongs to a segment).
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

}  // namespace

RECOPS_REGISTER_DRIVER(SegmentSumCsrDriver);

}  // namespace recops::cli
