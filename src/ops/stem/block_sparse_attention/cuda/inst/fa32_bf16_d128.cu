// One instantiation of the pipelined block-sparse attention kernel (cuda_sm80_fa) with 32 rows
// per warp (4 warps): bf16, D = 128.
#include "ops/stem/block_sparse_attention/cuda/fa.cuh"

namespace recops::ops::bsa_cuda {
template Status launch_fa<__nv_bfloat16, 128, 2>(const Args& a, const Context& ctx);
}  // namespace recops::ops::bsa_cuda
