// core/cuda/cublas.cpp: per-thread, per-device cuBLAS handles (see cublas.h).
#include "core/cuda/cublas.h"

#include <cuda_runtime_api.h>

#include "core/cuda/check.h"

namespace recops::core::cuda {

Status cublas_handle(cudaStream_t stream, cublasHandle_t* out) {
  constexpr int kMaxDevices = 64;
  thread_local cublasHandle_t handles[kMaxDevices] = {};
  int device = 0;
  RECOPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    return Status(StatusCode::cuda_error,
                  "cuBLAS handles: device index " + std::to_string(device) + " is out of range");
  cublasHandle_t& h = handles[device];
  if (h == nullptr) RECOPS_CUBLAS_RETURN_IF_ERROR(cublasCreate(&h));
  RECOPS_CUBLAS_RETURN_IF_ERROR(cublasSetStream(h, stream));
  *out = h;
  return Status::Ok();
}

}  // namespace recops::core::cuda
