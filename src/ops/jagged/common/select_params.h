// ops/jagged/common/select_params.h: the flat problem shared by the segment-select ops
// (jagged_index_select, keyed_jagged_index_select_dim1): their entries, goldens, the CPU path
// (select_cpu.cpp) and the CUDA path (cuda/select_launch.cu).
//
// Input segments s in [0, F*B): lengths[s], rows [in_off[s], in_off[s+1]) of the source, in_off
// the complete cumsum of lengths. Output segments j in [0, F*K): output j = f*K + k is input
// segment f*B + indices[k]; rows [out_off[j], out_off[j+1]) of the output, out_off the complete
// cumsum of the selected lengths. F = 1 for jagged_index_select.
#pragma once

#include <cstddef>
#include <cstdint>

#include "recops/context.h"
#include "recops/dtype.h"
#include "recops/status.h"

namespace recops::ops {

struct SelectParams {
  // forward:  src = values [total_L, D] (row stride src_row_stride), dst = out [out_rows, D]
  //           dense; out_lengths [F*K] written when not null
  // backward: src = grad [out_rows, D] (row stride src_row_stride), dst = grad_values
  //           [total_L, D] dense: the sum over every output segment of each input segment
  bool backward = false;
  const void* src = nullptr;
  int64_t src_row_stride = 0;
  void* dst = nullptr;
  DType dtype = DType::fp32;
  int64_t D = 1;
  const void* lengths = nullptr;  // [F*B]
  bool lengths_int64 = false;
  int64_t lengths_stride = 1;
  const void* indices = nullptr;  // [K], each in [0, B)
  bool indices_int64 = false;
  int64_t indices_stride = 1;
  void* out_lengths = nullptr;  // forward: [F*K], lengths' dtype, dense; may be null
  int64_t F = 1;
  int64_t B = 0;
  int64_t K = 0;
  int64_t total_L = 0;
  int64_t out_rows = 0;
  int device_index = 0;
  void* workspace = nullptr;  // CUDA: offsets and sort buffers (cuda/select_launch.cu)
  size_t workspace_bytes = 0;
};

// The shared implementations (the ops list them with their own golden).
Status select_run_cpu(const SelectParams& p, const Context& ctx);
Status select_run_cuda(const SelectParams& p, const Context& ctx);  // CUDA builds only
size_t select_cuda_workspace_bytes(const SelectParams& p);          // CUDA builds only

}  // namespace recops::ops
