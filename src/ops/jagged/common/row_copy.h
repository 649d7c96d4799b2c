// ops/jagged/common/row_copy.h: what the two row-copy conversions share. jagged_to_padded_dense
// (to_dense) and dense_to_jagged (to_jagged) move the same rows between a jagged tensor
// (total_L, D) and a dense one (B, S, D): row (b, l) with l < min(L_b, S) is jagged row o_b + l.
// They differ in which side they read and in what the rows outside that set get (to_dense: the
// padding value at dense rows l >= min(L_b, S); to_jagged: zeros at jagged rows with l >= S).
//
// Here: the flat params, the entries' common checks and dispatch (row_copy.cpp), the shared
// cpu_generic (row_copy_cpu.cpp) and cuda_sm80 (cuda/row_copy_launch.cu) implementations, and the
// implementation list. Each op keeps its shape function, its fp64 reference and its kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/dispatch.h"
#include "ops/jagged/common/jagged_dims.h"
#include "ops/jagged/common/row_copy_tuning.h"
#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/registry.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops {

enum class RowCopyDir {
  to_dense,   // jagged_to_padded_dense: src is the jagged values, dst the dense out
  to_jagged,  // dense_to_jagged: src is the dense tensor, dst the jagged out
};

// JaggedDims: seq_offsets, dtype (of src and dst; the ops move bits, so only its size matters),
// B, S (max_seq_len of jagged_to_padded_dense), D, total_L, the device.
struct RowCopyParams : JaggedDims {
  RowCopyDir dir = RowCopyDir::to_dense;
  // The jagged side: (total_L, D) by seq_offsets; row r starts at r*jagged_row_stride elements.
  // The dense side: (B, S, D); row (b, l) starts at b*dense_batch_stride + l*dense_row_stride.
  // A row's D elements are dense on both sides.
  const void* src = nullptr;  // to_dense: the jagged side; to_jagged: the dense side
  void* dst = nullptr;        // the other side
  int64_t elem_size = 4;
  int64_t jagged_row_stride = 0;
  int64_t dense_batch_stride = 0;
  int64_t dense_row_stride = 0;

  // to_dense: padding_value encoded in dtype (low elem_size bytes); to_jagged: 0 (zeros).
  uint64_t padding_bits = 0;
};

// The op a direction is: "jagged_to_padded_dense" or "dense_to_jagged".
inline const char* row_copy_op(RowCopyDir dir) {
  return dir == RowCopyDir::to_dense ? "jagged_to_padded_dense" : "dense_to_jagged";
}

Status row_copy_cpu(const RowCopyParams& p, const Context& ctx);
#ifdef RECOPS_WITH_CUDA
Status row_copy_cuda(const RowCopyParams& p, const Context& ctx);
#endif

// The implementation list of a conversion, best first: the shared cuda_sm80 and cpu_generic, then
// the op's own golden.
template <Status (*kReference)(const RowCopyParams&, const Context&)>
const std::vector<core::Impl<RowCopyParams>>& row_copy_impls() {
  using P = RowCopyParams;
  static const std::vector<core::Impl<P>> list = {
#ifdef RECOPS_WITH_CUDA
      {"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
       core::cuda_capability_at_least<80, P>, row_copy_cuda, core::row_copy_cuda_candidates},
#endif
      {"cpu_generic", DeviceType::cpu, core::always_available, core::accept_all<P>, row_copy_cpu,
       core::row_copy_cpu_candidates},
      {"reference", DeviceType::cpu, core::always_available, core::accept_all<P>, kReference},
  };
  return list;
}

// The OpInfo of a conversion, for `recops list`.
inline OpInfo row_copy_info(RowCopyDir dir, const std::vector<core::Impl<RowCopyParams>>& impls) {
  return {row_copy_op(dir), "jagged", core::describe_impls(impls)};
}

// The rest of an entry once its shape function has produced `expect` (out's shape): the checks
// both conversions make (devices, out's shape and dtype, dense trailing dims), the params, the
// padding value (to_dense), the offsets' contents, and the dispatch. `src` is dense_to_jagged's
// dense or jagged_to_padded_dense's values.
Status row_copy_run(RowCopyDir dir, const TensorView& src, const TensorView& seq_offsets,
                    const TensorView& out, const Shape& expect, std::optional<double> padding_value,
                    const std::vector<core::Impl<RowCopyParams>>& impls, const Context& ctx);

}  // namespace recops::ops
