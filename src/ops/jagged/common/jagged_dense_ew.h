// ops/jagged/common/jagged_dense_ew.h: what the jagged-dense elementwise ops share
// (jagged_dense_elementwise_add, jagged_dense_elementwise_mul and its backward; jagged_ops.md
// §2.3, §2.4(a)). x is jagged [total_L, D] by seq_offsets, y dense [B, S, D]; row (b, l) of x
// meets y[b, l] while l < S. They differ only in the per-element step and in what rows l >= S get.
//
// Here: the flat params, the shared checks and dispatch of the entries (jagged_dense_ew.cpp), the
// cpu_generic (jagged_dense_ew_cpu.cpp) and cuda_sm80 (cuda/jagged_dense_ew_launch.cu)
// implementations, the fp64 golden (jagged_dense_ew_reference.cpp) and the implementation list.
// Each op keeps its registration.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch.h"
#include "ops/jagged/common/jagged_dense_ew_api.h"
#include "ops/jagged/common/jagged_dims.h"
#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/registry.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops {

enum class JdEwMode {
  add,      // out(b,l) = x(b,l) + y[b,l] for l < S, x(b,l) for l >= S
  mul,      // out(b,l) = x(b,l) * y[b,l] for l < S, 0 for l >= S
  mul_bwd,  // dx(b,l) = grad(b,l) * y[b,l] (l < S, else 0);
            // dy[b,l] = grad(b,l) * x(b,l) for l < min(L_b, S), else 0
};

// JaggedDims: seq_offsets, dtype (of every floating tensor), B, S, D, total_L, the device.
struct JdEwParams : JaggedDims {
  JdEwMode mode = JdEwMode::add;
  // Jagged operands [total_L, D], row r at r * row stride elements, D dense within a row.
  const void* a = nullptr;  // add/mul: x; mul_bwd: grad
  const void* x = nullptr;  // mul_bwd: the forward's x; else unused
  const void* y = nullptr;  // dense [B, S, D]: (b, l) at b * y_batch_stride + l * y_row_stride
  void* out = nullptr;      // jagged [total_L, D], contiguous (mul_bwd: dx)
  void* dy = nullptr;       // mul_bwd: dense [B, S, D], contiguous; else unused
  int64_t a_row_stride = 0;
  int64_t x_row_stride = 0;
  int64_t y_batch_stride = 0;
  int64_t y_row_stride = 0;
};

Status jd_ew_cpu(const JdEwParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status jd_ew_cuda(const JdEwParams& p, const Context& ctx);
#endif

// The fp64 golden of every mode (jagged_dense_ew_reference.cpp).
Status jd_ew_reference(const JdEwParams& p, const Context& ctx);

// The implementation list, best first: cuda_sm80 (which also serves sm90), cpu_generic, then the
// golden.
const std::vector<core::Impl<JdEwParams>>& jd_ew_impls();

// The tensors of one call. a: x (forward) or grad (mul_bwd); x: mul_bwd's x (else empty).
struct JdEwTensors {
  TensorView a, x, seq_offsets, y;
  TensorView out;  // [total_L, *E]
  TensorView dy;   // mul_bwd: [B, S, *E]
};

// The shape rules of the forward: x [total_L, *E], seq_offsets [B+1], y [B, S, *E] -> [total_L,
// *E]. `a_name` names the jagged input in messages ("x_values" or "grad").
Status jd_ew_shape(const char* op, const char* a_name, const TensorView& a,
                   const TensorView& seq_offsets, const TensorView& y, Shape* out_shape);

// Every check of a call (shapes, dtypes, devices, layouts, the offsets' contents), the params and
// the dispatch. Empty work launches nothing.
Status jd_ew_run(const char* op, JdEwMode mode, const JdEwTensors& t,
                 const std::vector<core::Impl<JdEwParams>>& impls, const Context& ctx);

// A forward entry's body (add or mul): x_values into a, the checks and the dispatch.
Status jd_ew_forward(const char* op, JdEwMode mode, const JaggedDenseElementwiseArgs& a,
                     const TensorView& out, const Context& ctx);

}  // namespace recops::ops
