// ops/jagged/common/jagged2_bmm.cpp: see jagged2_bmm.h (checks, params, implementation lists).
#include "ops/jagged/common/jagged2_bmm.h"

#include <string>

#include "core/offsets.h"
#include "ops/jagged/common/jagged2_host.h"
#include "ops/jagged/common/select_host.h"

namespace recops::ops::j2bmm {
namespace {
bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}
}  // namespace

const std::vector<core::Impl<Params>>& impls(Mode mode) {
  static const auto array =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, array_golden);
  static const auto outer =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, outer_golden);
  return mode == Mode::xyt ? outer : array;
}

Status check_args(const char* op, const TensorView* sq, const char* sq_name, const TensorView& jag,
                  const char* jag_name, const TensorView& y, const char* y_name,
                  const TensorView& seq_lengths, const TensorView& sq_offsets,
                  const char* sq_off_name, const TensorView& offsets, const char* off_name,
                  int64_t max_L) {
  RECOPS_CHECK(floating(jag.dtype), op, ": ", jag_name, " must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(jag.dtype));
  RECOPS_CHECK(!sq || (sq->ndim == 1 && sq->dtype == jag.dtype), op, ": ", sq_name,
               " must be 1-D [sum N_b^2] of ", jag_name, "'s dtype ", dtype_name(jag.dtype),
               "; got ", sq ? describe(*sq) : std::string());
  RECOPS_CHECK(jag.ndim == 2 && jag.inner_contiguous(1), op, ": ", jag_name,
               " must be 2-D [sum N_b, D] with last stride 1; got ", describe(jag));
  RECOPS_CHECK(y.ndim == 2 && y.sizes[0] == jag.sizes[0] && y.sizes[1] == jag.sizes[1] &&
                   y.dtype == jag.dtype && y.inner_contiguous(1),
               op, ": ", y_name, " must be like ", jag_name, " (", describe(jag),
               ") with last stride 1; got ", describe(y));
  RECOPS_CHECK(max_L >= 0, op, ": max_seq_len=", max_L, " must be >= 0");
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "seq_lengths", seq_lengths));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, sq_off_name, sq_offsets));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, off_name, offsets));
  RECOPS_CHECK(seq_lengths.sizes[0] == sq_offsets.sizes[0] - 1 &&
                   seq_lengths.sizes[0] == offsets.sizes[0] - 1,
               op, ": seq_lengths has ", seq_lengths.sizes[0], " elements, ", sq_off_name, " ",
               sq_offsets.sizes[0], " and ", off_name, " ", offsets.sizes[0],
               "; seq_lengths must be [B] with both offsets [B+1]");
  if (sq) RECOPS_RETURN_IF_ERROR(core::check_same_device(op, jag_name, jag, sq_name, *sq));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, jag_name, jag, y_name, y));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, jag_name, jag, "seq_lengths", seq_lengths));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, jag_name, jag, sq_off_name, sq_offsets));
  return core::check_same_device(op, jag_name, jag, off_name, offsets);
}

Params make_params(Mode mode, const TensorView& a, const TensorView& y, const TensorView& z,
                   const TensorView& seq_lengths, const TensorView& sq_offsets,
                   const TensorView& offsets, int64_t max_L) {
  Params p;
  p.mode = mode;
  p.a = a.data;
  p.a_stride = a.strides[0];
  p.y = y.data;
  p.y_stride = y.strides[0];
  p.z = z.data;
  p.dtype = y.dtype;
  p.sq_offsets = sq_offsets.data;
  p.sq_int64 = sq_offsets.dtype == DType::int64;
  p.sq_stride = sq_offsets.strides[0];
  p.offsets = offsets.data;
  p.off_int64 = offsets.dtype == DType::int64;
  p.off_stride = offsets.strides[0];
  p.lengths = seq_lengths.data;
  p.len_int64 = seq_lengths.dtype == DType::int64;
  p.len_stride = seq_lengths.strides[0];
  p.B = seq_lengths.sizes[0];
  p.D = y.sizes[1];
  p.max_L = max_L;
  p.total_L = y.sizes[0];
  p.total_sq = mode == Mode::xyt ? z.sizes[0] : a.sizes[0];
  p.device_index = y.device.index;
  return p;
}

Status run(const char* op, const Params& p, DeviceType backend, const TensorView& seq_lengths,
           const TensorView& sq_offsets, const char* sq_off_name, const TensorView& offsets,
           const char* off_name, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(
      core::validate_offsets(op, off_name, offsets, p.total_L, "total_L (rows of y)", ctx));
  RECOPS_RETURN_IF_ERROR(jagged2_validate(op, sq_off_name, sq_offsets, p.total_sq,
                                          "the jagged² tensor's size", &seq_lengths, "seq_lengths",
                                          ctx));
  std::vector<int64_t> o, len;
  bool read = false;
  RECOPS_RETURN_IF_ERROR(select_read_ints(offsets, ctx, &o, &read));
  if (read) RECOPS_RETURN_IF_ERROR(select_read_ints(seq_lengths, ctx, &len, &read));
  for (size_t b = 0; read && b + 1 < o.size(); ++b)
    RECOPS_CHECK(o[b + 1] - o[b] == len[b], op, ": ", off_name, "[", b + 1, "]-", off_name, "[", b,
                 "]=", o[b + 1] - o[b], " but seq_lengths[", b, "]=", len[b],
                 "; sequence b must have seq_lengths[b] rows");
  const int64_t out_elems = p.mode == Mode::xyt ? p.total_sq : p.total_L * p.D;
  if (out_elems == 0) return Status::Ok();  // nothing to write: no launch
  if (p.plain) return p.mode == Mode::xyt ? outer_golden(p, ctx) : array_golden(p, ctx);
  return core::dispatch(op, impls(p.mode), backend, p, ctx);
}

}  // namespace recops::ops::j2bmm
