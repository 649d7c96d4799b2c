// ops/jagged/common/bmm.h: what the jagged matmuls' entries (common/bmm.cpp) and their op folders
// share: the implementation lists and the implementations' declarations. The goldens live in the
// op folders (jagged_dense_bmm/reference.cpp, jagged_jagged_bmm/reference.cpp); the CPU path in
// common/bmm_cpu_kernel.h (bmm_cpu.cpp, bmm_cpu_avx2.cpp), the CUDA path in
// common/cuda/bmm_launch.cu.
#pragma once

#include <string>
#include <vector>

#include "core/dispatch.h"
#include "ops/jagged/common/bmm_params.h"

namespace recops::ops::bmm {

Status run_cpu(const BmmParams& p, const Context& ctx);       // cpu_generic
Status run_cpu_avx2(const BmmParams& p, const Context& ctx);  // cpu_avx2: AVX2 + FMA + F16C
#ifdef RECOPS_WITH_CUDA
Status run_cuda(const BmmParams& p, const Context& ctx);      // cuda_sm80
Status run_cuda_mma(const BmmParams& p, const Context& ctx);  // cuda_sm80_mma: fp16, bf16
// cuda_sm90: fp16, bf16 on sm_90a (wgmma), aligned operands (sm90_accepts says why not).
std::string sm90_accepts(const BmmParams& p);
Status run_cuda_sm90(const BmmParams& p, const Context& ctx);
// Its kernels (bmm_sm90_bf16.cu, bmm_sm90_fp16.cu) and the bf16 one's image version on `device`.
Status launch_sm90_bf16(const BmmParams& p, int layout, void* stream);
Status launch_sm90_fp16(const BmmParams& p, int layout, void* stream);
int sm90_binary_version(int device);
#endif
// The fp64 goldens (and, with p.plain, the plain baselines) of each op.
Status jagged_dense_bmm_reference(const BmmParams& p, const Context& ctx);
Status jagged_jagged_bmm_reference(const BmmParams& p, const Context& ctx);

// cuda_sm90 (fp16/bf16, wgmma), cuda_sm80_mma (fp16/bf16 on tensor cores), cuda_sm80, cpu_avx2,
// cpu_generic, reference (the mode's golden).
const std::vector<core::Impl<BmmParams>>& bmm_impls(BmmMode mode);

}  // namespace recops::ops::bmm
