// tools/recops/cmd_list.cpp: `recops list`: ops, implementations per backend and whether this
// build and machine can run them, CPU features, CUDA devices.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "core/kit/op_def.h"
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

// One case of an op's cases.yaml: its id, the dtypes of its rows and what it expects.
struct CaseSummary {
  std::string op, id, expects;
  std::vector<std::string> dtypes;
};

// The cases of the selected ops, in file order; false on a case file that does not load.
bool case_summaries(const Selection& sel, std::vector<CaseSummary>* out) {
  int errors = 0;
  const std::vector<CaseFile> files =
      load_case_files(sel, "cases.yaml", FileKind::cases, case_schema(), &errors);
  for (const CaseFile& f : files) {
    std::map<std::pair<std::string, std::string>, size_t> at;
    for (const CaseRow& row : expand(f)) {
      if (std::find(sel.ops.begin(), sel.ops.end(), row.op) == sel.ops.end()) continue;
      auto [it, fresh] = at.try_emplace({row.op, row.spec->id}, out->size());
      if (fresh)
        out->push_back({row.op, row.spec->id, row.spec->expect_error ? "error" : "values", {}});
      auto& d = (*out)[it->second].dtypes;
      const std::string dt(
          dtype_name(row.dtype.value_or(driver_for(row.op)->default_dtype(row.op))));
      if (std::find(d.begin(), d.end(), dt) == d.end()) d.push_back(dt);
    }
  }
  return errors == 0;
}

// `list --cases`: the case ids of each selected op's cases.yaml with their dtypes, to pick one for
// `check --case ID`.
int list_cases(bool as_json, const std::vector<std::string>& ops, const std::string& cases_dir) {
  Selection sel;
  if (!select("list", cases_dir, ops, {"cpu"}, &sel)) return 2;
  std::vector<CaseSummary> cases;
  const bool ok = case_summaries(sel, &cases);
  nlohmann::json j = nlohmann::json::array();
  Table t({"op", "case", "dtypes", "expects"});
  for (const CaseSummary& c : cases) {
    std::string joined;
    for (const auto& x : c.dtypes) joined += (joined.empty() ? "" : ",") + x;
    t.add({c.op, c.id, joined, c.expects});
    j.push_back({{"op", c.op}, {"case", c.id}, {"dtypes", c.dtypes}, {"expects", c.expects}});
  }
  if (as_json)
    std::cout << j.dump(2) << "\n";
  else
    std::cout << t.str();
  return ok ? 0 : 1;
}

// `list --markdown`: docs/ops.md, every op of this build by family with its schema, Python name,
// backward op, implementations, the dtypes its cases check and its docstring (arguments, dtypes,
// limits). Nothing machine-dependent (availability, CPU name), so the file is the same on every
// machine for one build configuration.
int list_markdown(const std::string& cases_dir) {
  Selection sel;
  if (!select("list", cases_dir, {}, {"cpu"}, &sel)) return 2;
  std::vector<CaseSummary> cases;
  const bool ok = case_summaries(sel, &cases);
  const auto ops = list_ops();
  std::map<std::string, std::vector<const OpInfo*>> by_family;
  for (const auto& op : ops) by_family[op.family].push_back(&op);
  const auto code_list = [](const std::vector<std::string>& xs) {
    std::string r;
    for (const auto& x : xs) r += (r.empty() ? "`" : ", `") + x + "`";
    return r.empty() ? std::string("none") : r;
  };

  std::ostringstream md;
  md << "# Operators\n\n"
     << "Generated from the op registry and each op's `cases.yaml` by `recops list --markdown` "
        "(`make docs`); do not edit by hand. The test `ops_md_current` fails when this file is "
        "out of date.\n\n"
     << "Lists the implementations of a build "
     << (core::cuda::built_with_cuda() ? "with" : "without")
     << " CUDA: a CUDA build adds each op's `cuda*` implementations ahead of the CPU ones "
        "(`recops list` there shows them and whether this machine runs them). Implementations "
        "are listed best first; the op runs the first that is available and accepts the problem. "
        "The dtypes are those the op's cases check against the fp64 reference; the docstring "
        "gives each argument's shape, dtypes and limits.\n\n";
  for (const auto& [family, list] : by_family) {
    md << "- `" << family << "`:";
    for (const OpInfo* op : list) md << " [" << op->name << "](#" << op->name << ")";
    md << "\n";
  }
  for (const auto& [family, list] : by_family) {
    md << "\n## " << family << "\n";
    for (const OpInfo* op : list) {
      md << "\n### " << op->name << "\n\n";
      const kit::OpDef* def = kit::find_def(op->name);
      if (def) {
        md << "- schema: `recops::" << def->schema() << "`\n";
        if (def->python_name != "-")
          md << "- Python: `recops." << (def->python_name.empty() ? def->name : def->python_name)
             << "`\n";
        if (!def->backward.empty())
          md << "- backward: [" << def->backward << "](#" << def->backward << ")\n";
      }
      for (const DeviceType b : {DeviceType::cuda, DeviceType::cpu}) {
        std::string l;
        for (const auto& im : op->impls) {
          if (im.backend != b) continue;
          l += (l.empty() ? "`" : ", `") + im.id + "`";
          if (!im.candidates.empty())
            l += " (tunable, " + std::to_string(im.candidates.size()) + " configurations)";
        }
        if (!l.empty()) md << "- implementations (" << backend_name(b) << "): " << l << "\n";
      }
      std::vector<std::string> dtypes;
      int n_values = 0, n_errors = 0;
      for (const CaseSummary& c : cases) {
        if (c.op != op->name) continue;
        if (c.expects == "error") {
          ++n_errors;
          continue;
        }
        ++n_values;
        for (const auto& d : c.dtypes)
          if (std::find(dtypes.begin(), dtypes.end(), d) == dtypes.end()) dtypes.push_back(d);
      }
      md << "- dtypes checked: " << code_list(dtypes) << "\n"
         << "- cases: " << n_values << " checked against the reference, " << n_errors
         << " bad-input cases (`recops list --cases --op " << op->name << "`)\n";
      if (def && !def->doc.empty()) {
        std::string doc = def->doc;
        while (!doc.empty() && (doc.back() == '\n' || doc.back() == ' ')) doc.pop_back();
        md << "\n```text\n" << doc << "\n```\n";
      }
    }
  }
  std::cout << md.str();
  return ok ? 0 : 1;
}

}  // namespace

int run_list(bool as_json, bool tuning, bool cases, const std::vector<std::string>& selected,
             const std::string& cases_dir, bool markdown) {
  if (markdown) return list_markdown(cases_dir);
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
