// core/cuda/launch.cpp: device-limit checks and the launch itself for core/cuda/launch.h.
#include "core/cuda/launch.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

namespace recops::core::cuda {
namespace {

// Per-device cudaDeviceProp, filled on first use. Entries are never removed, so the pointers
// handed out stay valid.
std::mutex g_props_mutex;
std::map<int, std::unique_ptr<cudaDeviceProp>> g_props;

// Per (kernel, device): its attributes and the dynamic shared-memory limit already set on it.
struct KernelInfo {
  cudaFuncAttributes attr{};
  size_t dynamic_limit_set = 0;
};
std::mutex g_kernels_mutex;
std::map<std::pair<const void*, int>, KernelInfo> g_kernels;

std::string where(const LaunchSite& site) {
  return std::string(site.op) + ": kernel " + site.kernel + " launched at " + site.file + ":" +
         std::to_string(site.line);
}

Status refuse(const LaunchSite& site, const std::string& why) {
  return Status(StatusCode::internal, where(site) + ": " + why);
}

std::string dim3_str(dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " + std::to_string(d.z) + ")";
}

Status read_properties(int device, cudaDeviceProp* p) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(p, device));
  return Status::Ok();
}

Status read_attributes(const void* func, cudaFuncAttributes* attr) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaFuncGetAttributes(attr, func));
  return Status::Ok();
}

Status raise_dynamic_smem(const void* func, size_t bytes) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
      func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  return Status::Ok();
}

Status current_device(int* device) {
  RECOPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(device));
  return Status::Ok();
}

}  // namespace

Status device_properties(int device, const cudaDeviceProp** props) {
  std::lock_guard<std::mutex> lock(g_props_mutex);
  auto it = g_props.find(device);
  if (it == g_props.end()) {
    auto p = std::make_unique<cudaDeviceProp>();
    RECOPS_RETURN_IF_ERROR(read_properties(device, p.get()));
    it = g_props.emplace(device, std::move(p)).first;
  }
  *props = it->second.get();
  return Status::Ok();
}

Status current_device_properties(const cudaDeviceProp** props, int* device) {
  int d = 0;
  RECOPS_RETURN_IF_ERROR(current_device(&d));
  if (device) *device = d;
  return device_properties(d, props);
}

Status annotate(const LaunchSite& site, Status s) {
  if (s.ok()) return s;
  return Status(s.code(), where(site) + ": " + s.message());
}

Status check_launch(const LaunchSite& site, const void* func, dim3 grid, dim3 block,
                    size_t dynamic_smem) {
  int device = 0;
  const cudaDeviceProp* p = nullptr;
  RECOPS_RETURN_IF_ERROR(annotate(site, current_device_properties(&p, &device)));

  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0)
    return refuse(site, "zero-size launch, grid " + dim3_str(grid) + " block " + dim3_str(block) +
                            " (empty problems must return before launching)");
  if (grid.x > static_cast<unsigned>(p->maxGridSize[0]) ||
      grid.y > static_cast<unsigned>(p->maxGridSize[1]) ||
      grid.z > static_cast<unsigned>(p->maxGridSize[2]))
    return refuse(site,
                  "grid " + dim3_str(grid) + " exceeds the device limit " +
                      dim3_str(dim3(p->maxGridSize[0], p->maxGridSize[1], p->maxGridSize[2])));
  if (block.x > static_cast<unsigned>(p->maxThreadsDim[0]) ||
      block.y > static_cast<unsigned>(p->maxThreadsDim[1]) ||
      block.z > static_cast<unsigned>(p->maxThreadsDim[2]))
    return refuse(
        site, "block " + dim3_str(block) + " exceeds the device limit " +
                  dim3_str(dim3(p->maxThreadsDim[0], p->maxThreadsDim[1], p->maxThreadsDim[2])));

  std::lock_guard<std::mutex> lock(g_kernels_mutex);
  auto key = std::make_pair(func, device);
  auto it = g_kernels.find(key);
  if (it == g_kernels.end()) {
    KernelInfo info;
    RECOPS_RETURN_IF_ERROR(annotate(site, read_attributes(func, &info.attr)));
    it = g_kernels.emplace(key, info).first;
  }
  KernelInfo& k = it->second;
  const unsigned long long threads = static_cast<unsigned long long>(block.x) * block.y * block.z;
  if (threads > static_cast<unsigned long long>(k.attr.maxThreadsPerBlock))
    return refuse(site, "block of " + std::to_string(threads) +
                            " threads exceeds the kernel's limit of " +
                            std::to_string(k.attr.maxThreadsPerBlock) + " on " + p->name +
                            " (registers per thread: " + std::to_string(k.attr.numRegs) + ")");
  const size_t static_smem = k.attr.sharedSizeBytes;
  if (static_smem + dynamic_smem > p->sharedMemPerBlockOptin)
    return refuse(site, "shared memory " + std::to_string(static_smem) + " static + " +
                            std::to_string(dynamic_smem) +
                            " dynamic bytes exceeds the device limit of " +
                            std::to_string(p->sharedMemPerBlockOptin) + " bytes per block");
  if (dynamic_smem > static_cast<size_t>(k.attr.maxDynamicSharedSizeBytes) &&
      dynamic_smem > k.dynamic_limit_set) {
    RECOPS_RETURN_IF_ERROR(annotate(site, raise_dynamic_smem(func, dynamic_smem)));
    k.dynamic_limit_set = dynamic_smem;
  }
  return Status::Ok();
}

Status launch_checked(const LaunchSite& site, const void* func, dim3 grid, dim3 block,
                      size_t dynamic_smem, cudaStream_t stream, void** args) {
  auto launch = [&]() -> Status {
    RECOPS_CUDA_RETURN_IF_ERROR(cudaLaunchKernel(func, grid, block, args, dynamic_smem, stream));
    RECOPS_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    return Status::Ok();
  };
  return annotate(site, launch());
}

Status persistent_grid(const void* func, int threads, size_t dynamic_smem, int64_t work_items,
                       unsigned* grid) {
  int device = 0;
  const cudaDeviceProp* p = nullptr;
  RECOPS_RETURN_IF_ERROR(current_device_properties(&p, &device));
  // Resident blocks per SM, asked of the runtime once per (kernel, device, threads, smem).
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int, size_t>, int> cache;
  int per_sm = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto key = std::make_tuple(func, device, threads, dynamic_smem);
    auto it = cache.find(key);
    if (it == cache.end()) {
      RECOPS_CUDA_RETURN_IF_ERROR(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, func, threads, dynamic_smem));
      it = cache.emplace(key, per_sm).first;
    }
    per_sm = it->second;
  }
  const int64_t resident = static_cast<int64_t>(p->multiProcessorCount) * (per_sm > 0 ? per_sm : 1);
  const int64_t g = work_items < resident ? work_items : resident;
  *grid = static_cast<unsigned>(g > 0 ? g : 1);
  return Status::Ok();
}

int kernel_binary_version(const void* func, int device) {
  const auto key = std::make_pair(func, device);
  {
    std::lock_guard<std::mutex> lock(g_kernels_mutex);
    if (auto it = g_kernels.find(key); it != g_kernels.end()) return it->second.attr.binaryVersion;
  }
  ScopedDevice guard(device);
  if (!guard.status().ok()) return 0;
  KernelInfo info;
  if (!read_attributes(func, &info.attr).ok()) {
    (void)cudaGetLastError();
    return 0;
  }
  std::lock_guard<std::mutex> lock(g_kernels_mutex);
  return g_kernels.emplace(key, info).first->second.attr.binaryVersion;
}

std::string sm90a_reason(int device, int image_version) {
  const cudaDeviceProp* props = nullptr;
  if (!device_properties(device, &props).ok() || props == nullptr || props->major != 9 ||
      props->minor != 0)
    return "runs on compute capability 9.0 devices only (sm_90a code)";
  if (image_version != 90) return "is missing from this build (RECOPS_CUDA_ARCHS lacks 90a)";
  return {};
}

ScopedDevice::ScopedDevice(int device) {
  auto enter = [&]() -> Status {
    RECOPS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&previous_));
    if (previous_ != device) {
      RECOPS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
      switched_ = true;
    }
    return Status::Ok();
  };
  status_ = enter();
}

ScopedDevice::~ScopedDevice() {
  if (switched_) (void)cudaSetDevice(previous_);
}

}  // namespace recops::core::cuda
