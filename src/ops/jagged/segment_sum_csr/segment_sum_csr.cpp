// jagged/segment_sum_csr/segment_sum_csr.cpp: the entry. All validation happens here, once; then
// the ordered implementation list runs the first implementation that accepts. At the end: the
// op's registration (its OpInfo for `recops list` and its argument table for the bindings).
#include "ops/jagged/segment_sum_csr/segment_sum_csr.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/segment_sum_csr/impls.h"

namespace recops::ops::segment_sum_csr_ns {
namespace {
constexpr const char* kOp = "segment_sum_csr";

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

bool supported(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16 ||
         t == DType::int32 || t == DType::int64;
}

// Everything but the csr_seg contents (no data is read: the Meta kernel runs this too).
Status check_meta(const SegmentSumCsrArgs& a) {
  RECOPS_CHECK(a.batch_size >= 1, kOp, ": batch_size=", a.batch_size, " must be >= 1");
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(kOp, "csr_seg", a.csr_seg));
  RECOPS_CHECK(supported(a.values.dtype), kOp,
               ": values must be fp64, fp32, fp16, bf16, int32 or int64, got ",
               dtype_name(a.values.dtype));
  RECOPS_CHECK(a.values.ndim == 1 && a.values.is_contiguous(), kOp,
               ": values must be 1-D and contiguous [N]; got ", describe(a.values));
  RECOPS_CHECK(a.values.sizes[0] % a.batch_size == 0, kOp, ": values.size(0)=", a.values.sizes[0],
               " must be a multiple of batch_size=", a.batch_size,
               " (N = csr_seg[S] * batch_size)");
  return core::check_same_device(kOp, "values", a.values, "csr_seg", a.csr_seg);
}
}  // namespace
}  // namespace recops::ops::segment_sum_csr_ns

namespace recops {

Status segment_sum_csr_shape(const SegmentSumCsrArgs& a, Shape* out_shape) {
  using namespace ops::segment_sum_csr_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  *out_shape = {a.csr_seg.sizes[0] - 1};
  return Status::Ok();
}

Status segment_sum_csr(const SegmentSumCsrArgs& a, const TensorView& out, const Context& ctx) {
  using namespace ops::segment_sum_csr_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(a));
  const int64_t S = a.csr_seg.sizes[0] - 1;
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", a.values, "out", out));
  RECOPS_CHECK(
      out.ndim == 1 && out.sizes[0] == S && out.dtype == a.values.dtype && out.is_contiguous(), kOp,
      ": out must be contiguous [S] = [", S, "] of values' dtype ", dtype_name(a.values.dtype),
      "; got ", describe(out));
  Params p;
  p.values = a.values.data;
  p.out = out.data;
  p.dtype = a.values.dtype;
  p.csr_seg = a.csr_seg.data;
  p.csr_int64 = a.csr_seg.dtype == DType::int64;
  p.csr_stride = a.csr_seg.strides[0];
  p.S = S;
  p.batch_size = a.batch_size;
  p.N = a.values.sizes[0];
  p.device_index = a.values.device.index;
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(kOp, "csr_seg", a.csr_seg, p.N / p.batch_size,
                                                "values.size(0) / batch_size", ctx));
  if (S == 0) return Status::Ok();  // no segments: nothing to launch
  return core::dispatch(kOp, impls(), a.values.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::segment_sum_csr_ns {
namespace {
constexpr const char* kDoc = R"(Sums consecutive blocks of values given by CSR offsets.

``out[i] = values[csr_seg[i]*batch_size : csr_seg[i+1]*batch_size].sum()`` (0 for an empty
segment), as FBGEMM's ``segment_sum_csr``.

Args:
    batch_size: values per ``csr_seg`` unit, >= 1.
    csr_seg: ``[S+1]`` int32 or int64 on values' device: first 0, non-decreasing, last
        ``values.size(0) / batch_size``.
    values: ``[N]``, fp64, fp32, fp16, bf16, int32 or int64.

Returns:
    ``[S]``, values' dtype. Floating sums accumulate in fp32 (fp64 for fp64).

Not differentiable (upstream has no backward): values that require grad are refused.

Raises:
    RuntimeError naming the argument and the rule: ``batch_size < 1``; ``values`` not 1-D, of
    another dtype, or of a size that is not a multiple of ``batch_size``; invalid ``csr_seg``
    (on CUDA checked only with validation on); tensors on different devices.
)";
}  // namespace
}  // namespace recops::ops::segment_sum_csr_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::segment_sum_csr_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(kit::Def<SegmentSumCsrArgs>(kOp, "jagged")
              .arg<&SegmentSumCsrArgs::batch_size>("batch_size", {.sym = true})
              .arg<&SegmentSumCsrArgs::csr_seg>("csr_seg")
              .arg<&SegmentSumCsrArgs::values>("values", {.dense_from = 0})
              .out("out")
              .device_arg(2)
              .shapes_from<&segment_sum_csr_shape, &SegmentSumCsrArgs::values>()
              .run_one<&segment_sum_csr>()
              .forward_only()
              .doc("", kDoc));
}
