// core/cuda/cublas.h: one cuBLAS handle per (host thread, device) for the kernels that hand a
// plain matrix product to cuBLAS (the Stem indexer's scoring GEMM), and cuBLAS status codes as
// Status values naming the call. CUDA translation units only.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "recops/status.h"

namespace recops::core::cuda {

// The calling thread's handle for the current device, bound to `stream`. A thread takes a handle
// on first use (from a process-wide pool, else a new one) and keeps it for its life; when the
// thread ends the handle goes back to the pool, so short-lived threads reuse handles instead of
// each leaving one (and its workspace) behind; a pooled handle's next thread binds it to its own
// stream, as one thread switching streams does (cublasSetStream, which also resets the handle to
// cuBLAS's default workspace pool). Handles are never destroyed: destroying them at
// process exit can run after the CUDA context is gone. cuBLAS allocates its default workspace at
// creation, so later calls on the handle may be captured into a CUDA graph.
Status cublas_handle(cudaStream_t stream, cublasHandle_t* out);

inline Status cublas_status(cublasStatus_t s, const char* what, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status(StatusCode::cuda_error, std::string(what) + " failed: " + cublasGetStatusName(s) +
                                            " (" + cublasGetStatusString(s) + ") at " + file + ":" +
                                            std::to_string(line));
}

}  // namespace recops::core::cuda

#define RECOPS_CUBLAS_RETURN_IF_ERROR(call)                                     \
  do {                                                                          \
    ::recops::Status _recops_bs =                                               \
        ::recops::core::cuda::cublas_status((call), #call, __FILE__, __LINE__); \
    if (!_recops_bs.ok()) return _recops_bs;                                    \
  } while (0)
