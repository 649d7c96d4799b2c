// tools/recops/cmd_list.cpp: `recops list`: ops, implementations per backend and whether this
// build and machine can run them, CPU features, CUDA devices.
#include <nlohmann/json.hpp>

#include <iostream>

#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/parallel.h"
#include "recops/registry.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"

namespace recops::cli {

int run_list(bool as_json) {
  const auto ops = list_ops();
  const int ndev = core::cuda::device_count();
  if (as_json) {
    nlohmann::json j;
    j["cuda_built"] = core::cuda::built_with_cuda();
    j["cpu"] = {{"name", core::cpu_name()},
                {"features", core::cpu_features_str()},
                {"threads", core::max_threads()}};
    j["cuda_devices"] = nlohmann::json::array();
    for (int i = 0; i < ndev; ++i)
      j["cuda_devices"].push_back({{"index", i},
                                   {"name", core::cuda::device_name(i)},
                                   {"compute_capability", core::cuda::compute_capability(i)}});
    j["ops"] = nlohmann::json::array();
    for (const auto& op : ops) {
      nlohmann::json o{
          {"name", op.name}, {"family", op.family}, {"impls", nlohmann::json::array()}};
      for (const auto& im : op.impls)
        o["impls"].push_back({{"id", im.id},
                              {"backend", backend_name(im.backend)},
                              {"available", im.unavailable.empty()},
                              {"unavailable", im.unavailable}});
      j["ops"].push_back(o);
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "CPU: " << core::cpu_name() << "\n"
            << "  features: " << core::cpu_features_str() << "\n"
            << "  threads: " << core::max_threads() << "\n";
  std::cout << "CUDA: ";
  if (!core::cuda::built_with_cuda()) {
    std::cout << "not built (RECOPS_WITH_CUDA=OFF)\n";
  } else if (ndev == 0) {
    std::cout << "built; no device visible\n";
  } else {
    std::cout << ndev << " device(s)\n";
    for (int i = 0; i < ndev; ++i) {
      const int cc = core::cuda::compute_capability(i);
      std::cout << "  " << i << ": " << core::cuda::device_name(i) << " (sm_" << cc << ")\n";
    }
  }
  std::cout << "\n";
  Table t({"op", "family", "backend", "impl", "status"});
  for (const auto& op : ops)
    for (const auto& im : op.impls)
      t.add({op.name, op.family, backend_name(im.backend), im.id,
             im.unavailable.empty() ? "available" : "unavailable: " + im.unavailable});
  std::cout << t.str();
  std::cout
      << "\nImplementations are listed best first; the entry runs the first that is available "
         "and accepts the problem (`reference` last).\n";
  return 0;
}

}  // namespace recops::cli
