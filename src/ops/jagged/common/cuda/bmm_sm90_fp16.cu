// ops/jagged/common/cuda/bmm_sm90_fp16.cu: the fp16 instance of cuda_sm90 of the jagged matmuls
// (bmm_sm90_kernel.cuh: one kernel for each of its three operand layouts and two tile widths).
#include "ops/jagged/common/bmm.h"
#include "ops/jagged/common/cuda/bmm_sm90_kernel.cuh"

namespace recops::ops::bmm {

Status launch_sm90_fp16(const BmmParams& p, int layout, void* stream) {
  return launch_sm90<__half>(p, layout, stream);
}

}  // namespace recops::ops::bmm
