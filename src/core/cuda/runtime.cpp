// core/cuda/runtime.cpp: the CUDA services of runtime.h over the CUDA runtime API.
#include "core/cuda/runtime.h"

#include <cuda_runtime_api.h>

#include <vector>

#include "core/cuda/check.h"

namespace recops::core::cuda {

bool built_with_cuda() {
  return true;
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky "no driver" error
    return 0;
  }
  return n;
}

int compute_capability(int index) {
  cudaDeviceProp p{};
  if (index >= device_count() || cudaGetDeviceProperties(&p, index) != cudaSuccess) return 0;
  return p.major * 10 + p.minor;
}

std::string device_name(int index) {
  cudaDeviceProp p{};
  if (index >= device_count() || cudaGetDeviceProperties(&p, index) != cudaSuccess) return "none";
  return p.name;
}

std::string any_device_reason() {
  return device_count() > 0 ? "" : "no CUDA device visible";
}

std::string capability_reason(int index, int min_cc) {
  const int cc = compute_capability(index);
  if (cc >= min_cc) return {};
  return "device " + std::to_string(index) + " has compute capability " + std::to_string(cc / 10) +
         "." + std::to_string(cc % 10) + "; needs " + std::to_string(min_cc / 10) + "." +
         std::to_string(min_cc % 10) + " or newer";
}

Status copy_strided_to_host(void* host, const void* device, int64_t elem_size, int64_t count,
                            int64_t stride, int device_index, void* stream) {
  if (count <= 0) return Status::Ok();
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  auto s = static_cast<cudaStream_t>(stream);
  const size_t es = static_cast<size_t>(elem_size);
  if (stride == 1) {
    RECOPS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host, device, es * static_cast<size_t>(count), cudaMemcpyDeviceToHost, s));
  } else {
    RECOPS_CUDA_RETURN_IF_ERROR(
        cudaMemcpy2DAsync(host, es, device, es * static_cast<size_t>(stride), es,
                          static_cast<size_t>(count), cudaMemcpyDeviceToHost, s));
  }
  RECOPS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(s));
  return Status::Ok();
}

Status zero_async(void* device, size_t bytes, int device_index, void* stream) {
  if (bytes == 0) return Status::Ok();
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  RECOPS_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(device, 0, bytes, static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

bool stream_capturing(void* stream) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return st != cudaStreamCaptureStatusNone;
}

Status malloc_device(void** ptr, size_t bytes, int device_index) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  RECOPS_CUDA_RETURN_IF_ERROR(cudaMalloc(ptr, bytes == 0 ? 1 : bytes));
  return Status::Ok();
}

void free_device(void* ptr) {
  (void)cudaFree(ptr);
}

Status memcpy_any(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  RECOPS_CUDA_RETURN_IF_ERROR(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  return Status::Ok();
}

Status synchronize(int device_index) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  RECOPS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  return Status::Ok();
}

Status create_stream(int device_index, void** stream) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  cudaStream_t s = nullptr;
  RECOPS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  *stream = s;
  return Status::Ok();
}

void destroy_stream(void* stream) {
  if (stream) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream));
}

Status mem_get_info(int device_index, size_t* free_bytes, size_t* total_bytes) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_index));
  RECOPS_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(free_bytes, total_bytes));
  return Status::Ok();
}

}  // namespace recops::core::cuda
