// tools/recops/cmd_list.cpp: `recops list`: ops, implementations per backend and whether this
// build and machine can run them, CPU features, CUDA devices.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <iostream>

#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/parallel.h"
#include "recops/registry.h"
#include "recops/tuning.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"
#include "tools/recops/driver.h"

namespace recops::cli {
namespace {

// `recops list --tuning`: the tunable implementations, where the tuning files come from, and the
// entries for this machine's devices (the CPU and each visible CUDA device).
int list_tuning(bool as_json) {
  const auto ops = list_ops();
  std::vector<std::string> devices = {tuning_device_name(DeviceType::cpu)};
  for (int i = 0; i < core::cuda::device_count(); ++i) {
    const std::string n = tuning_device_name(DeviceType::cuda, i);
    if (std::find(devices.begin(), devices.end(), n) == devices.end()) devices.push_back(n);
  }
  std::string where;
  const auto files = tuning_files(&where);
  const auto errors = tuning_load_errors();
  std::vector<TunedEntry> entries;
  for (const auto& dev : devices)
    for (auto& e : tuned_entries(dev)) entries.push_back(std::move(e));

  if (as_json) {
    nlohmann::json j;
    j["source"] = where;
    j["files"] = files;
    j["errors"] = errors;
    j["devices"] = devices;
    j["tunable"] = nlohmann::json::array();
    for (const auto& op : ops)
      for (const auto& im : op.impls) {
        if (im.candidates.empty()) continue;
        nlohmann::json c = nlohmann::json::array();
        for (const auto& cfg : im.candidates) c.push_back(cfg.str());
        j["tunable"].push_back({{"op", op.name},
                                {"impl", im.id},
                                {"backend", backend_name(im.backend)},
                                {"candidates", c}});
      }
    j["entries"] = nlohmann::json::array();
    for (const auto& e : entries)
      j["entries"].push_back({{"device", e.device},
                              {"op", e.op},
                              {"impl", e.impl},
                              {"dtype", e.dtype},
                              {"bucket", e.bucket},
                              {"config", e.config.str()},
                              {"file", e.file}});
    std::cout << j.dump(2) << "\n";
    return errors.empty() ? 0 : 1;
  }
  Table tun({"op", "backend", "impl", "candidates", "default (first candidate)"});
  for (const auto& op : ops)
    for (const auto& im : op.impls)
      if (!im.candidates.empty())
        tun.add({op.name, backend_name(im.backend), im.id, std::to_string(im.candidates.size()),
                 im.candidates.front().str()});
  std::cout << "Tunable implementations:\n" << tun.str() << "\n";
  std::cout << "Tuning files: " << (where.empty() ? "none" : where) << "\n";
  for (const auto& f : files) std::cout << "  " << f << "\n";
  for (const auto& e : errors) std::cout << "  error: " << e << "\n";
  std::cout << "\nTuned for this machine (";
  for (size_t i = 0; i < devices.size(); ++i) std::cout << (i ? ", " : "") << devices[i];
  std::cout << "): ";
  if (entries.empty()) {
    std::cout << "nothing; every op runs its built-in defaults\n";
  } else {
    std::cout << entries.size() << " entries\n";
    Table t({"device", "op", "impl", "dtype", "bucket", "config"});
    for (const auto& e : entries)
      t.add({e.device, e.op, e.impl, e.dtype, e.bucket, e.config.str()});
    std::cout << t.str();
  }
  return errors.empty() ? 0 : 1;
}

// `list --cases`: the case ids of each selected op's cases.yaml with their dtypes, to pick one for
// `check --case ID`.
int list_cases(bool as_json, const std::vector<std::string>& ops, const std::string& cases_dir) {
  Selection sel;
  if (!select("list", cases_dir, ops, {"cpu"}, &sel)) return 2;
  int errors = 0;
  const std::vector<CaseFile> files =
      load_case_files(sel, "cases.yaml", FileKind::cases, case_schema(), &errors);
  nlohmann::json j = nlohmann::json::array();
  Table t({"op", "case", "dtypes", "expects"});
  for (const CaseFile& f : files) {
    std::map<std::pair<std::string, std::string>, std::vector<std::string>> dtypes;
    std::vector<std::pair<std::string, const CaseSpec*>> order;
    for (const CaseRow& row : expand(f)) {
      if (std::find(sel.ops.begin(), sel.ops.end(), row.op) == sel.ops.end()) continue;
      auto& d = dtypes[{row.op, row.spec->id}];
      if (d.empty()) order.push_back({row.op, row.spec});
      const std::string dt(
          dtype_name(row.dtype.value_or(driver_for(row.op)->default_dtype(row.op))));
      if (std::find(d.begin(), d.end(), dt) == d.end()) d.push_back(dt);
    }
    for (const auto& [op, spec] : order) {
      const auto& d = dtypes[{op, spec->id}];
      std::string joined;
      for (const auto& x : d) joined += (joined.empty() ? "" : ",") + x;
      const std::string expects = spec->expect_error ? "error" : "values";
      t.add({op, spec->id, joined, expects});
      j.push_back({{"op", op}, {"case", spec->id}, {"dtypes", d}, {"expects", expects}});
    }
  }
  if (as_json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << t.str();
  return errors ? 1 : 0;
}

}  // namespace

int run_list(bool as_json, bool tuning, bool cases, const std::vector<std::string>& selected,
             const std::string& cases_dir) {
  if (cases) return list_cases(as_json, selected, cases_dir);
  if (tuning) return list_tuning(as_json);
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
                              {"unavailable", im.unavailable},
                              {"tunable_candidates", im.candidates.size()}});
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
