// core/cuda/launch.h: the checked kernel launcher (architecture.md habit 5).
//
// Every kernel launch in recops goes through RECOPS_LAUNCH_KERNEL. Before launching it checks the
// grid, the block and the shared memory (static + dynamic) against the limits of the current
// device and of the kernel itself, raises the kernel's dynamic shared-memory limit when a launch
// asks for more than the default 48 KB, refuses zero-size launches, launches on the given stream
// and reads cudaGetLastError right after. Any failure comes back as a Status naming the op, the
// kernel and the file:line of the launch site.
//
// Usable from .cu and plain .cpp translation units alike (it launches through cudaLaunchKernel).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/cuda/check.h"
#include "recops/status.h"

namespace recops::core::cuda {

// Where a launch comes from; every error names all four.
struct LaunchSite {
  const char* op;      // e.g. "jagged_to_padded_dense"
  const char* kernel;  // the kernel expression as written at the launch site
  const char* file;
  int line;
};

// Properties of device `device`, read once per device and cached for the life of the process.
Status device_properties(int device, const cudaDeviceProp** props);

// The current device's properties (cudaGetDevice, then device_properties).
Status current_device_properties(const cudaDeviceProp** props, int* device = nullptr);

// Checks the configuration of one launch of `func` on the current device and raises its dynamic
// shared-memory limit when needed. Returns the Status the launch would fail with, or Ok.
Status check_launch(const LaunchSite& site, const void* func, dim3 grid, dim3 block,
                    size_t dynamic_smem);

// Grid for a grid-stride (persistent) kernel: min(work_items, SMs * resident blocks per SM of
// `func` at `threads` threads and `dynamic_smem` bytes), at least 1. work_items must be >= 1.
Status persistent_grid(const void* func, int threads, size_t dynamic_smem, int64_t work_items,
                       unsigned* grid);

// cudaFuncAttributes::binaryVersion of the image of `func` that the runtime picks on `device`
// (e.g. 90 for an sm_90a image on a 9.0 device); 0 when it cannot be read. Read once per
// (kernel, device) and cached with the attributes check_launch reads, so accept tests can call it
// on every problem.
int kernel_binary_version(const void* func, int device);

// "" when `device` has compute capability 9.0 and a cuda_sm90 kernel's image there is sm_90a
// (`image_version`: its kernel_binary_version, 90); else why, worded to follow the
// implementation's name ("runs on compute capability 9.0 devices only (sm_90a code)", "is missing
// from this build (RECOPS_CUDA_ARCHS lacks 90a)").
std::string sm90a_reason(int device, int image_version);

// Launches `func` with an array of pointers to its arguments, then checks cudaGetLastError.
Status launch_checked(const LaunchSite& site, const void* func, dim3 grid, dim3 block,
                      size_t dynamic_smem, cudaStream_t stream, void** args);

// Prefixes a failed Status with "op: kernel (file:line): ", keeping its code.
Status annotate(const LaunchSite& site, Status s);

// Makes `device` current for the lifetime of the guard and restores the previous device after;
// no-op when it already is current. Check ok() (or status()) right after constructing it.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  Status status_;
};

// Launches kernel(args...) after the checks above. Arguments are converted to the kernel's
// parameter types first, exactly as <<< >>> would.
template <class... KArgs, class... Args>
Status launch_kernel(const LaunchSite& site, void (*kernel)(KArgs...), dim3 grid, dim3 block,
                     size_t dynamic_smem, void* stream, Args&&... args) {
  static_assert(sizeof...(KArgs) == sizeof...(Args), "launch_kernel: argument count mismatch");
  const void* func = reinterpret_cast<const void*>(kernel);
  RECOPS_RETURN_IF_ERROR(check_launch(site, func, grid, block, dynamic_smem));
  std::tuple<std::decay_t<KArgs>...> converted(std::forward<Args>(args)...);
  return std::apply(
      [&](auto&... a) {
        void* ptrs[sizeof...(KArgs) + 1] = {static_cast<void*>(&a)..., nullptr};
        return launch_checked(site, func, grid, block, dynamic_smem,
                              static_cast<cudaStream_t>(stream), ptrs);
      },
      converted);
}

}  // namespace recops::core::cuda

// RECOPS_LAUNCH_KERNEL(op, kernel, grid, block, dynamic_smem, stream, args...): a checked launch;
// evaluates to a recops::Status. `kernel` may be a template-id; wrap it in parentheses when it
// contains commas.
#define RECOPS_LAUNCH_KERNEL(op, kernel, grid, block, smem, stream, ...)                   \
  ::recops::core::cuda::launch_kernel(                                                     \
      ::recops::core::cuda::LaunchSite{(op), #kernel, __FILE__, __LINE__}, kernel, (grid), \
      (block), (smem), (stream), __VA_ARGS__)
