// recops/device.h: where a tensor's memory lives.
#pragma once

#include <cstdint>
#include <string>

namespace recops {

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // CUDA ordinal; 0 for the CPU

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }
};

// The backend names used by the CLI and results ("cpu", "cuda").
inline const char* backend_name(DeviceType t) {
  return t == DeviceType::cpu ? "cpu" : "cuda";
}

}  // namespace recops
