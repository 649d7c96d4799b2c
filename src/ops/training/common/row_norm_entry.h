// training/common/row_norm_entry.h: the entry checks the row-norm ops share (x [..., D] with
// D >= 1, eps, outputs, float dtypes), with messages naming the op, the argument and the rule.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/dispatch.h"
#include "core/offsets.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

inline bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// x: [..., D], D >= 1, floating, contiguous; eps >= 0 and finite.
inline Status check_rows_x(const char* op, const TensorView& x, double eps) {
  RECOPS_CHECK(is_float(x.dtype), op, ": x must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(x.dtype));
  RECOPS_CHECK(x.ndim >= 1 && x.sizes[x.ndim - 1] >= 1, op,
               ": x must be [..., D] with D >= 1; got ", describe(x));
  RECOPS_CHECK(x.is_contiguous(), op, ": x must be contiguous; got ", describe(x));
  RECOPS_CHECK(std::isfinite(eps) && eps >= 0, op, ": eps=", eps, " must be finite and >= 0");
  return Status::Ok();
}

// `name` (an output or an incoming gradient): contiguous, `shape` and `dtype`, on x's device.
inline Status check_like(const char* op, const char* name, const TensorView& t, const TensorView& x,
                         const Shape& shape, DType dtype) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "x", x, name, t));
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous ", dtype_name(dtype), shape_str(shape), "; got ", describe(t));
  return Status::Ok();
}

// An optional dtype argument: floating when given.
inline Status check_out_dtype(const char* op, const std::optional<DType>& t) {
  RECOPS_CHECK(!t || is_float(*t), op, ": out_dtype must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(*t));
  return Status::Ok();
}

#ifdef RECOPS_WITH_CUDA
// cuda_sm80's accept test for a row op's params P (dtype, device_index): fp32, fp16, bf16 on
// capability >= 8.0; fp64 runs on the CPU only (the golden's dtype).
template <class P>
std::string row_cuda_accepts(const P& p) {
  if (p.dtype == DType::fp64) return "fp64 runs on the CPU only (the golden's dtype)";
  return core::cuda_capability_at_least<80, P>(p);
}
#endif

// A row op's implementation list: cuda_sm80 (row_cuda_accepts; pass RECOPS_IF_CUDA(run_cuda)),
// cpu_avx2 when given (the CPU path built with AVX2 + FMA, where core::avx2_fma_reason() allows),
// cpu_generic, reference.
template <class P>
std::vector<core::Impl<P>> row_impls(Status (*cuda)(const P&, const Context&),
                                     Status (*cpu)(const P&, const Context&),
                                     Status (*reference)(const P&, const Context&),
                                     Status (*cpu_avx2)(const P&, const Context&) = nullptr) {
  std::vector<core::Impl<P>> first;
#ifdef RECOPS_WITH_CUDA
  if (cuda)
    first.push_back(
        {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, row_cuda_accepts<P>, cuda});
#endif
  if (cpu_avx2)
    first.push_back(
        {"cpu_avx2", DeviceType::cpu, core::avx2_fma_reason, core::accept_all<P>, cpu_avx2});
  return core::with_cpu_impls<P>(std::move(first), cpu, reference);
}

}  // namespace recops::ops::training
