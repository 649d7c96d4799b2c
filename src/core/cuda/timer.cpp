// core/cuda/timer.cpp: EventTimer over cudaEvent_t (compiled only in CUDA builds; the stub lives
// in timer.h).
#include "core/cuda/timer.h"

#include <cuda_runtime_api.h>

#include "core/cuda/check.h"

namespace recops::core::cuda {

EventTimer::EventTimer(int device_index) : device_(device_index) {
  init_ = cuda_status(cudaSetDevice(device_index), "cudaSetDevice", __FILE__, __LINE__);
  cudaEvent_t a = nullptr, b = nullptr;
  if (init_.ok()) init_ = cuda_status(cudaEventCreate(&a), "cudaEventCreate", __FILE__, __LINE__);
  if (init_.ok()) init_ = cuda_status(cudaEventCreate(&b), "cudaEventCreate", __FILE__, __LINE__);
  start_ = a;
  stop_ = b;
}

EventTimer::~EventTimer() {
  if (start_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(start_));
  if (stop_) (void)cudaEventDestroy(static_cast<cudaEvent_t>(stop_));
}

Status EventTimer::start(void* stream) {
  if (!init_.ok()) return init_;
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaEventRecord(static_cast<cudaEvent_t>(start_), static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status EventTimer::stop(void* stream) {
  if (!init_.ok()) return init_;
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaEventRecord(static_cast<cudaEvent_t>(stop_), static_cast<cudaStream_t>(stream)));
  return Status::Ok();
}

Status EventTimer::elapsed_ms(double* ms) {
  *ms = 0;
  if (!init_.ok()) return init_;
  RECOPS_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(static_cast<cudaEvent_t>(stop_)));
  float f = 0;
  RECOPS_CUDA_RETURN_IF_ERROR(
      cudaEventElapsedTime(&f, static_cast<cudaEvent_t>(start_), static_cast<cudaEvent_t>(stop_)));
  *ms = f;
  return Status::Ok();
}

}  // namespace recops::core::cuda
