// core/cuda/cublas.cpp: per-thread, per-device cuBLAS handles from a process-wide pool (see
// cublas.h).
#include "core/cuda/cublas.h"

#include <cuda_runtime_api.h>

#include <mutex>
#include <vector>

#include "core/cuda/check.h"

namespace recops::core::cuda {
namespace {
constexpr int kMaxDevices = 64;

// Handles no thread holds, per device. Allocated once and never destroyed: its handles outlive
// every thread, and nothing runs cuBLAS teardown at process exit.
struct Pool {
  std::mutex mutex;
  std::vector<cublasHandle_t> free[kMaxDevices];
};
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// The calling thread's handles; when the thread ends they go back to the pool for the next
// thread (a host thread per call, as a thread pool or `recops check --threads` makes, took a
// new handle and its workspace each time and kept it: device memory ran out).
struct Lease {
  cublasHandle_t handles[kMaxDevices] = {};
  ~Lease() {
    Pool& p = pool();
    const std::lock_guard<std::mutex> lock(p.mutex);
    for (int d = 0; d < kMaxDevices; ++d)
      if (handles[d] != nullptr) p.free[d].push_back(handles[d]);
  }
};
}  // namespace

Status cublas_handle(cudaStream_t stream, cublasHandle_t* out) {
  thread_local Lease lease;
  int device = 0;
  RECOPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    return Status(StatusCode::cuda_error,
                  "cuBLAS handles: device index " + std::to_string(device) + " is out of range");
  cublasHandle_t& h = lease.handles[device];
  if (h == nullptr) {
    Pool& p = pool();
    {
      const std::lock_guard<std::mutex> lock(p.mutex);
      if (!p.free[device].empty()) {
        h = p.free[device].back();
        p.free[device].pop_back();
      }
    }
    if (h == nullptr) RECOPS_CUBLAS_RETURN_IF_ERROR(cublasCreate(&h));
  }
  RECOPS_CUBLAS_RETURN_IF_ERROR(cublasSetStream(h, stream));
  *out = h;
  return Status::Ok();
}

}  // namespace recops::core::cuda
