// One instantiation of the block-sparse attention kernel: fp16, D = 256.
#include "ops/stem/block_sparse_attention/cuda/launch.h"

namespace recops::ops::bsa_cuda {
template Status launch_fwd<__half, 256>(const Args& a, const Context& ctx);
}  // namespace recops::ops::bsa_cuda
