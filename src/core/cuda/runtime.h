// core/cuda/runtime.h: the few CUDA runtime services the entries need, callable from plain C++
// translation units. In a build without CUDA every function returns a cuda_error Status saying so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "recops/status.h"

namespace recops::core::cuda {

bool built_with_cuda();
// Number of visible devices (0 without CUDA or without a driver).
int device_count();
// Compute capability as major*10+minor of device `index`, 0 when unavailable.
int compute_capability(int index);
std::string device_name(int index);

// Copies `count` elements of `elem_size` bytes, `stride` elements apart, from device memory into
// dense host memory, on `stream`, and waits for them.
Status copy_strided_to_host(void* host, const void* device, int64_t elem_size, int64_t count,
                            int64_t stride, int device_index, void* stream);
// Sets `bytes` bytes of device memory to 0 on `stream` (cudaMemsetAsync; no wait).
Status zero_async(void* device, size_t bytes, int device_index, void* stream);
// True while `stream` is capturing a CUDA graph (no synchronisation is allowed then).
bool stream_capturing(void* stream);

// "" when some CUDA device is visible, else the reason (for Impl::available).
std::string any_device_reason();
// "" when device `index` has compute capability >= min_cc (major*10+minor), else the reason
// (for Impl::can_implement: the tensors' device decides, not device 0).
std::string capability_reason(int index, int min_cc);

Status malloc_device(void** ptr, size_t bytes, int device_index);
void free_device(void* ptr);
Status memcpy_any(void* dst, const void* src, size_t bytes);  // cudaMemcpyDefault, synchronous
Status synchronize(int device_index);
// A non-blocking stream of device `index` (cudaStreamCreateWithFlags), for load tests; destroy it
// with destroy_stream.
Status create_stream(int device_index, void** stream);
void destroy_stream(void* stream);
// Free and total device memory of device `index` (cudaMemGetInfo), for memory measurements.
Status mem_get_info(int device_index, size_t* free_bytes, size_t* total_bytes);

}  // namespace recops::core::cuda
