// ops/jagged/common/flash_entry.h: what the entries of the jagged flash attentions
// (jagged_dense_flash_attention, multi_head_jagged_flash_attention) share: the implementation list
// and the checks of a data dtype and of an output, with messages naming the op, the argument and
// the rule.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/dispatch.h"
#include "core/offsets.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::jagged_flash {

inline bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// An output: contiguous, the given shape and dtype, on the device of `like` (q).
inline Status check_out(const char* op, const char* name, const TensorView& t, const Shape& shape,
                        DType dtype, const TensorView& like) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "q", like, name, t));
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
               " must be contiguous ", shape_str(shape), " ", dtype_name(dtype), "; got ",
               describe(t));
  return Status::Ok();
}

// The list: "cuda_sm80" with the op's accept test (pass RECOPS_IF_CUDA(...) for both: nullptr
// leaves it out), "cpu_avx2" when the op has one (the CPU path built with AVX2 + FMA, run where
// the CPU has them), "cpu_generic", "reference".
template <class Params>
std::vector<core::Impl<Params>> impls(Status (*cuda_run)(const Params&, const Context&),
                                      std::string (*cuda_accepts)(const Params&),
                                      Status (*cpu)(const Params&, const Context&),
                                      Status (*reference)(const Params&, const Context&),
                                      Status (*cpu_avx2)(const Params&, const Context&) = nullptr) {
  std::vector<core::Impl<Params>> first;
  if (cuda_run)
    first.push_back(
        {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason, cuda_accepts, cuda_run});
  if (cpu_avx2)
    first.push_back(
        {"cpu_avx2", DeviceType::cpu, core::avx2_fma_reason, core::accept_all<Params>, cpu_avx2});
  return core::with_cpu_impls<Params>(std::move(first), cpu, reference);
}

}  // namespace recops::ops::jagged_flash
