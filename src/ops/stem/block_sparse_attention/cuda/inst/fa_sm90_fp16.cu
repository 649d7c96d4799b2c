// One instantiation of the Hopper block-sparse attention kernel (cuda_sm90): fp16, D = 128.
#include "ops/stem/block_sparse_attention/cuda/fa_sm90.cuh"

namespace recops::ops::bsa_cuda {
template Status launch_sm90<__half>(const Args& a, const Context& ctx);
}  // namespace recops::ops::bsa_cuda
