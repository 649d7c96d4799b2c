// block_sparse_attention/cuda/launch.h: the templated launcher of the kernel in kernels.cuh,
// instantiated once per (dtype, D) in inst/, and called by launch.cu.
#pragma once

#include "core/cuda/launch.h"
#include "ops/stem/block_sparse_attention/cuda/kernels.cuh"
#include "recops/context.h"
#include "recops/status.h"

namespace recops::ops::bsa_cuda {

template <class T, int kD>
Status launch_fwd(const Args& a, const Context& ctx) {
  const size_t smem = static_cast<size_t>(kQTile + 2 * kKTile) * (kD + 8) * sizeof(uint16_t);
  auto* kernel = &bsa_fwd_kernel<T, kD>;
  unsigned grid = 1;
  RECOPS_RETURN_IF_ERROR(core::cuda::persistent_grid(reinterpret_cast<const void*>(kernel),
                                                     kThreads, smem, a.num_tiles, &grid));
  return RECOPS_LAUNCH_KERNEL("block_sparse_attention", kernel, dim3(grid), dim3(kThreads), smem,
                              ctx.stream, a);
}

extern template Status launch_fwd<__nv_bfloat16, 64>(const Args&, const Context&);
extern template Status launch_fwd<__nv_bfloat16, 128>(const Args&, const Context&);
extern template Status launch_fwd<__nv_bfloat16, 256>(const Args&, const Context&);
extern template Status launch_fwd<__half, 64>(const Args&, const Context&);
extern template Status launch_fwd<__half, 128>(const Args&, const Context&);
extern template Status launch_fwd<__half, 256>(const Args&, const Context&);

}  // namespace recops::ops::bsa_cuda
