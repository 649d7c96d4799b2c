// ops/jagged/common/jagged_dense_ew.cpp: the checks, params and dispatch the jagged-dense
// elementwise entries share (jagged_dense_ew.h).
#include "ops/jagged/common/jagged_dense_ew.h"

#include <string>

#include "core/offsets.h"

namespace recops::ops {
namespace {

bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// A jagged input [total_L, *E] with E = expect_E: same dtype as `like`, trailing dims dense.
Status check_jagged_like(const char* op, const char* name, const TensorView& t, const Shape& shape,
                         const char* like_name, const TensorView& like) {
  RECOPS_CHECK(t.shape() == shape, op, ": ", name, " has shape ", shape_str(t.shape()),
               ", expected ", like_name, "'s shape ", shape_str(shape));
  RECOPS_CHECK(t.dtype == like.dtype, op, ": ", name, " dtype ", dtype_name(t.dtype),
               " differs from ", like_name, " dtype ", dtype_name(like.dtype));
  RECOPS_CHECK(t.inner_contiguous(1), op, ": ", name,
               "'s trailing dims must be dense (last stride 1); got ", describe(t));
  return core::check_same_device(op, like_name, like, name, t);
}

}  // namespace

const std::vector<core::Impl<JdEwParams>>& jd_ew_impls() {
  using P = JdEwParams;
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
       core::cuda_capability_at_least<80, P>, jd_ew_cuda},
#endif
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<P>, jd_ew_cpu},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>, jd_ew_reference},
  };
  return list;
}

Status jd_ew_shape(const char* op, const char* a_name, const TensorView& a,
                   const TensorView& seq_offsets, const TensorView& y, Shape* out_shape) {
  RECOPS_CHECK(a.ndim >= 1, op, ": ", a_name, " must have at least 1 dim [total_L, *E], got 0-D");
  RECOPS_CHECK(y.ndim == a.ndim + 1, op, ": y must be [B, S, *E] with ", a_name,
               "'s trailing dims E (", a.ndim + 1, "-D), got ", y.ndim, "-D ",
               shape_str(y.shape()));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", seq_offsets));
  RECOPS_CHECK(y.sizes[0] == seq_offsets.sizes[0] - 1, op, ": y.size(0)=", y.sizes[0],
               " but seq_offsets has ", seq_offsets.sizes[0],
               " elements; y's batch must be B = seq_offsets.numel() - 1");
  for (int i = 1; i < a.ndim; ++i)
    RECOPS_CHECK(y.sizes[i + 1] == a.sizes[i], op, ": y has shape ", shape_str(y.shape()), " but ",
                 a_name, " has shape ", shape_str(a.shape()), "; y's trailing dims must equal ",
                 a_name, "'s E");
  RECOPS_CHECK(floating(a.dtype), op, ": ", a_name, " must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(a.dtype));
  RECOPS_CHECK(y.dtype == a.dtype, op, ": y dtype ", dtype_name(y.dtype), " differs from ", a_name,
               " dtype ", dtype_name(a.dtype), "; floating inputs must share one dtype");
  *out_shape = a.shape();
  return Status::Ok();
}

Status jd_ew_run(const char* op, JdEwMode mode, const JdEwTensors& t,
                 const std::vector<core::Impl<JdEwParams>>& impls, const Context& ctx) {
  const bool bwd = mode == JdEwMode::mul_bwd;
  const char* a_name = bwd ? "grad" : "x_values";
  Shape expect;
  RECOPS_RETURN_IF_ERROR(jd_ew_shape(op, a_name, t.a, t.seq_offsets, t.y, &expect));
  if (bwd) RECOPS_RETURN_IF_ERROR(check_jagged_like(op, "x_values", t.x, expect, "grad", t.a));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, a_name, t.a, "seq_offsets", t.seq_offsets));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, a_name, t.a, "y", t.y));
  RECOPS_CHECK(t.a.inner_contiguous(1), op, ": ", a_name,
               "'s trailing dims must be dense (last stride 1); got ", describe(t.a));
  RECOPS_CHECK(t.y.inner_contiguous(2), op,
               ": y's trailing dims must be dense (last stride 1); got ", describe(t.y));
  const char* out_name = bwd ? "dx" : "out";
  RECOPS_CHECK(t.out.shape() == expect && t.out.dtype == t.a.dtype && t.out.is_contiguous(), op,
               ": ", out_name, " must be contiguous ", dtype_name(t.a.dtype), " ",
               shape_str(expect), ", got ", describe(t.out));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, a_name, t.a, out_name, t.out));
  if (bwd) {
    RECOPS_CHECK(t.dy.shape() == t.y.shape() && t.dy.dtype == t.y.dtype && t.dy.is_contiguous(), op,
                 ": dy must be contiguous ", dtype_name(t.y.dtype), " ", shape_str(t.y.shape()),
                 ", got ", describe(t.dy));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, a_name, t.a, "dy", t.dy));
  }

  JdEwParams p;
  p.mode = mode;
  p.a = t.a.data;
  p.x = bwd ? t.x.data : nullptr;
  p.y = t.y.data;
  p.out = t.out.data;
  p.dy = bwd ? t.dy.data : nullptr;
  p.seq_offsets = t.seq_offsets.data;
  p.dtype = t.a.dtype;
  p.offsets_int64 = t.seq_offsets.dtype == DType::int64;
  p.offsets_stride = t.seq_offsets.strides[0];
  p.B = t.seq_offsets.sizes[0] - 1;
  p.S = t.y.sizes[1];
  p.D = t.a.inner_numel(1);
  p.total_L = t.a.sizes[0];
  p.a_row_stride = t.a.strides[0];
  p.x_row_stride = bwd ? t.x.strides[0] : 0;
  p.y_batch_stride = t.y.strides[0];
  p.y_row_stride = t.y.strides[1];
  p.device_index = t.a.device.index;
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets", t.seq_offsets, p.total_L,
                                                "total_L (" + std::string(a_name) + ".size(0))",
                                                ctx));
  const bool no_work = p.D == 0 || (p.total_L == 0 && (!bwd || p.B * p.S == 0));
  if (no_work) return Status::Ok();
  return core::dispatch(op, impls, t.a.device.type, p, ctx);
}

Status jd_ew_forward(const char* op, JdEwMode mode, const JaggedDenseElementwiseArgs& a,
                     const TensorView& out, const Context& ctx) {
  JdEwTensors t;
  t.a = a.x_values;
  t.seq_offsets = a.seq_offsets;
  t.y = a.y;
  t.out = out;
  return jd_ew_run(op, mode, t, jd_ew_impls(), ctx);
}

}  // namespace recops::ops
