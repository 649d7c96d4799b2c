// One instantiation of the block-sparse attention kernel: bf16, D = 128.
#include "ops/stem/block_sparse_attention/cuda/launch.h"

namespace recops::ops::bsa_cuda {
template Status launch_fwd<__nv_bfloat16, 128>(const Args& a, const Context& ctx);
}  // namespace recops::ops::bsa_cuda
