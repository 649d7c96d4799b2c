// core/cuda/runtime_none.cpp: the CUDA services in a build without CUDA.
#include "core/cuda/runtime.h"

namespace recops::core::cuda {
namespace {
Status no_cuda() {
  return Status(StatusCode::cuda_error, "recops was built without CUDA (RECOPS_WITH_CUDA=OFF)");
}
}  // namespace

bool built_with_cuda() {
  return false;
}
int device_count() {
  return 0;
}
int compute_capability(int) {
  return 0;
}
std::string device_name(int) {
  return "none";
}
Status copy_strided_to_host(void*, const void*, int64_t, int64_t, int64_t, int, void*) {
  return no_cuda();
}
bool stream_capturing(void*) {
  return false;
}
std::string any_device_reason() {
  return "recops was built without CUDA";
}
std::string capability_reason(int, int) {
  return "recops was built without CUDA";
}
Status malloc_device(void**, size_t, int) {
  return no_cuda();
}
void free_device(void*) {}
Status memcpy_any(void*, const void*, size_t) {
  return no_cuda();
}
Status zero_async(void*, size_t, int, void*) {
  return no_cuda();
}
Status synchronize(int) {
  return no_cuda();
}
Status create_stream(int, void**) {
  return no_cuda();
}
void destroy_stream(void*) {}

Status mem_get_info(int, size_t*, size_t*) {
  return no_cuda();
}

}  // namespace recops::core::cuda
