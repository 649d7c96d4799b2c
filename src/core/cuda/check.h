// core/cuda/check.h: turn CUDA runtime errors into Status values naming the call and the place.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "recops/status.h"

namespace recops::core::cuda {

inline Status cuda_status(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return Status::Ok();
  return Status(StatusCode::cuda_error, std::string(what) + " failed: " + cudaGetErrorName(e) +
                                            " (" + cudaGetErrorString(e) + ") at " + file + ":" +
                                            std::to_string(line));
}

}  // namespace recops::core::cuda

#define RECOPS_CUDA_RETURN_IF_ERROR(call)                                     \
  do {                                                                        \
    ::recops::Status _recops_cs =                                             \
        ::recops::core::cuda::cuda_status((call), #call, __FILE__, __LINE__); \
    if (!_recops_cs.ok()) return _recops_cs;                                  \
  } while (0)
