// training/common/cuda/row_launchers.h: the declarations of a row op's per-dtype launchers, one
// line per op: launch_fwd<T> and launch_bwd<T> for float, __half and __nv_bfloat16, defined in the
// op's cuda/kernel.cuh and instantiated one per file in its inst/ (scripts/gen_instances.py), so
// that launch.cu's dtype switch compiles no kernel itself.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/status.h"

#define RECOPS_TRAINING_ROW_LAUNCHER(name, P)                    \
  template <class T>                                             \
  Status name(const P& p, const Context& ctx);                   \
  extern template Status name<float>(const P&, const Context&);  \
  extern template Status name<__half>(const P&, const Context&); \
  extern template Status name<__nv_bfloat16>(const P&, const Context&)

// launch_fwd<T> and launch_bwd<T> over the op's params type P.
#define RECOPS_TRAINING_ROW_LAUNCHERS(P)       \
  RECOPS_TRAINING_ROW_LAUNCHER(launch_fwd, P); \
  RECOPS_TRAINING_ROW_LAUNCHER(launch_bwd, P)

namespace recops::ops::training_dev {

// launch.cu's dtype switch: f(T{}) for T = float, __half, __nv_bfloat16; another dtype is an
// internal error naming op (the entry's list sends only these to CUDA).
template <class F>
Status row_dtype_switch(const char* op, DType t, F&& f) {
  switch (t) {
    case DType::fp32: return f(float{});
    case DType::fp16: return f(__half{});
    case DType::bf16: return f(__nv_bfloat16{});
    default:
      return Status(StatusCode::internal, std::string(op) + ": cuda_sm80 reached with a bad dtype");
  }
}

}  // namespace recops::ops::training_dev
