// One instantiation of the pipelined block-sparse attention kernel (cuda_sm80_fa): bf16, D = 64.
#include "ops/stem/block_sparse_attention/cuda/fa.cuh"

namespace recops::ops::bsa_cuda {
template Status launch_fa<__nv_bfloat16, 64, 1>(const Args& a, const Context& ctx);
}  // namespace recops::ops::bsa_cuda
