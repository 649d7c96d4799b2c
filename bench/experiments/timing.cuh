// bench/experiments/timing.cuh: the host helpers of wgmma_probe.cu (not an experiment): a checked
// CUDA call (CK) and the mean time of repeated launches between two events.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace experiments {

inline void check(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s failed at line %d: %s\n", what, line, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Mean milliseconds of `reps` calls of launch() (0 when reps <= 0).
template <class F>
float mean_ms(F&& launch, int reps) {
  if (reps <= 0) return 0.f;
  cudaEvent_t e0, e1;
  check(cudaEventCreate(&e0), "cudaEventCreate", __LINE__);
  check(cudaEventCreate(&e1), "cudaEventCreate", __LINE__);
  check(cudaEventRecord(e0), "cudaEventRecord", __LINE__);
  for (int r = 0; r < reps; ++r) launch();
  check(cudaEventRecord(e1), "cudaEventRecord", __LINE__);
  check(cudaEventSynchronize(e1), "cudaEventSynchronize", __LINE__);
  float ms = 0;
  check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime", __LINE__);
  check(cudaEventDestroy(e0), "cudaEventDestroy", __LINE__);
  check(cudaEventDestroy(e1), "cudaEventDestroy", __LINE__);
  return ms / static_cast<float>(reps);
}

}  // namespace experiments

#define CK(x) ::experiments::check((x), #x, __LINE__)
