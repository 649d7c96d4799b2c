// tools/recops/cmd_bench.cpp: `recops bench`: times each selected op's perf.yaml shapes
// (performance.md) and reports GB/s against the copy ceiling measured in the same run, and the
// change against the baseline stored for this device.
//
// CPU: wall time per call, all cores, warm-up, median of repeats. CUDA: CUDA events around each
// call, warm-up, median of >= 20. Inputs (with their outputs) rotate among several copies when
// one set fits in 50 MB, so caches do not flatter small shapes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "core/cuda/runtime.h"
#include "core/cuda/timer.h"
#include "core/parallel.h"
#include "recops/context.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"
#include "tools/recops/gen.h"

namespace recops::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kRotateBytes = 50e6;  // performance.md: rotate when a set fits in 50 MB
constexpr double kRegression = 0.05;   // flag a slowdown of more than 5%

struct Timing {
  Status status;
  double median_ms = 0, p10_ms = 0, p90_ms = 0;
  int reps = 0;
};

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(pos));
  const auto hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Timing summarize(const std::vector<double>& ms) {
  Timing t;
  t.reps = static_cast<int>(ms.size());
  t.median_ms = quantile(ms, 0.5);
  t.p10_ms = quantile(ms, 0.1);
  t.p90_ms = quantile(ms, 0.9);
  return t;
}

// Repeats `call(k)` (k = the rep index) and times each call: the stopping rule is at least
// `min_reps` and 0.1 s, or max_seconds once 3 reps are in.
template <class Call>
Timing time_calls(DeviceType backend, int warmup, int min_reps, double max_seconds, Call&& call) {
  Timing bad;
  for (int i = 0; i < warmup; ++i) {
    if (Status s = call(i); !s.ok()) {
      bad.status = s;
      return bad;
    }
  }
  if (backend == DeviceType::cuda)
    if (Status s = core::cuda::synchronize(0); !s.ok()) return bad.status = s, bad;
  std::vector<double> ms;
  const auto t0 = Clock::now();
  core::cuda::EventTimer timer(0);
  for (int k = 0;; ++k) {
    double m = 0;
    if (backend == DeviceType::cuda) {
      Status s = timer.start(nullptr);
      if (s.ok()) s = call(k);
      if (s.ok()) s = timer.stop(nullptr);
      if (s.ok()) s = timer.elapsed_ms(&m);
      if (!s.ok()) return bad.status = s, bad;
    } else {
      const auto a = Clock::now();
      if (Status s = call(k); !s.ok()) return bad.status = s, bad;
      m = std::chrono::duration<double, std::milli>(Clock::now() - a).count();
    }
    ms.push_back(m);
    const double el = std::chrono::duration<double>(Clock::now() - t0).count();
    const int n = static_cast<int>(ms.size());
    if ((n >= min_reps && el >= 0.1) || (el >= max_seconds && n >= 3) || n >= 5000) break;
  }
  return summarize(ms);
}

// The copy ceiling of this run: a large memcpy split over all cores on the CPU, a 1 GiB
// device-to-device copy on CUDA; bytes read + written over the median time.
Status copy_ceiling(DeviceType backend, double* gbps) {
  if (backend == DeviceType::cpu) {
    const int64_t bytes = int64_t{256} << 20;
    Tensor a = Tensor::empty({bytes}, DType::uint8), b = Tensor::empty({bytes}, DType::uint8);
    std::memset(a.data(), 1, static_cast<size_t>(bytes));
    std::memset(b.data(), 2, static_cast<size_t>(bytes));
    auto* src = static_cast<const char*>(a.data());
    auto* dst = static_cast<char*>(b.data());
    Timing t = time_calls(DeviceType::cpu, 2, 9, 3.0, [&](int) {
      core::parallel_for(bytes, int64_t{1} << 20, 0, [&](int64_t lo, int64_t hi) {
        std::memcpy(dst + lo, src + lo, static_cast<size_t>(hi - lo));
      });
      return Status::Ok();
    });
    if (!t.status.ok()) return t.status;
    *gbps = 2.0 * static_cast<double>(bytes) / (t.median_ms * 1e6);
    return Status::Ok();
  }
  const int64_t bytes = int64_t{1} << 30;
  Tensor a = Tensor::empty({bytes}, DType::uint8, Device::cuda(0));
  Tensor b = Tensor::empty({bytes}, DType::uint8, Device::cuda(0));
  Timing t = time_calls(DeviceType::cuda, 3, 20, 5.0, [&](int) {
    return core::cuda::memcpy_any(b.data(), a.data(), static_cast<size_t>(bytes));
  });
  if (!t.status.ok()) return t.status;
  *gbps = 2.0 * static_cast<double>(bytes) / (t.median_ms * 1e6);
  return Status::Ok();
}

struct Record {
  std::string op, case_id, impl, backend, device, dtype;
  nlohmann::json shape;
  Timing timing;
  double bytes = 0, flops = -1, ceiling_gbps = 0;
  std::optional<double> baseline_ms;
  std::string error;
};

std::string yaml_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

// Rewrites the `baselines:` section of a perf.yaml, keeping every other line as it is.
Status write_baselines(const CaseFile& file,
                       const std::map<std::string, std::map<std::string, Baseline>>& all,
                       const std::map<std::string, std::map<std::string, double>>& gbps) {
  std::ifstream in(file.path);
  if (!in) return Status(StatusCode::invalid_argument, file.path + ": cannot read");
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  in.close();
  // The section: from `baselines:` to the next top-level key.
  size_t begin = lines.size(), end = lines.size();
  if (file.baselines_line > 0) {
    begin = static_cast<size_t>(file.baselines_line - 1);
    end = begin + 1;
    while (end < lines.size() &&
           (lines[end].empty() || lines[end][0] == ' ' || lines[end][0] == '#'))
      ++end;
  }
  std::ostringstream os;
  os << "baselines:  # written by `recops bench --update-baseline`: device -> op/shape/dtype\n";
  for (const auto& [dev, entries] : all) {
    os << "  " << yaml_quote(dev) << ":\n";
    for (const auto& [key, b] : entries) {
      os << "    " << key << ": {time_ms: " << fmt_g(b.time_ms, 5);
      if (auto d = gbps.find(dev); d != gbps.end())
        if (auto g = d->second.find(key); g != d->second.end())
          os << ", gbps: " << fmt_g(g->second, 4);
      os << ", commit: " << yaml_quote(b.commit) << ", date: " << yaml_quote(b.date) << "}\n";
    }
  }
  std::ostringstream out;
  for (size_t i = 0; i < begin; ++i) out << lines[i] << "\n";
  out << os.str();
  for (size_t i = end; i < lines.size(); ++i) out << lines[i] << "\n";
  const std::string tmp = file.path + ".tmp";
  {
    std::ofstream f(tmp);
    f << out.str();
    if (!f) return Status(StatusCode::invalid_argument, tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), file.path.c_str()) != 0)
    return Status(StatusCode::invalid_argument, file.path + ": cannot replace");
  return Status::Ok();
}

}  // namespace

int run_bench(const BenchOptions& o) {
  const auto t_start = Clock::now();
  std::string dir;
  std::vector<std::string> ops;
  try {
    dir = ops_dir(o.cases_dir);
    ops = select_ops(o.ops);
  } catch (const std::exception& e) {
    std::cerr << "recops bench: " << e.what() << "\n";
    return 2;
  }
  std::string berr;
  const auto backends = select_backends(o.backends, &berr);
  if (!berr.empty()) {
    std::cerr << "recops bench: " << berr << "\n";
    return 2;
  }
  const std::string commit = project_commit(dir);
  const std::string date = today();
  const CaseSchema schema = case_schema();
  std::map<DeviceType, double> ceilings;
  std::vector<Record> records;
  int errors = 0, regressions = 0;

  // Results are data (habit 12): the JSON file is rewritten after every shape, so that a run cut
  // short by a time limit still leaves what it measured.
  auto write_json = [&]() -> bool {
    if (o.json.empty()) return true;
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : records) {
      if (!r.error.empty()) continue;
      const double gbps = r.bytes / (r.timing.median_ms * 1e6);
      const nlohmann::json null;
      nlohmann::json rec = {
          {"op", r.op},
          {"impl", r.impl},
          {"backend", r.backend},
          {"device", r.device},
          {"shape", r.shape},
          {"dtype", r.dtype},
          {"phase", "fwd"},
          {"case", r.case_id},
          {"time_ms", r.timing.median_ms},
          {"time_ms_p10", r.timing.p10_ms},
          {"time_ms_p90", r.timing.p90_ms},
          {"reps", r.timing.reps},
          {"tflops", r.flops >= 0 ? nlohmann::json(r.flops / (r.timing.median_ms * 1e9)) : null},
          {"gbps", gbps},
          {"bytes", r.bytes},
          {"frac_flops_ceiling", null},
          {"frac_bw_ceiling", gbps / r.ceiling_gbps},
          {"ceilings", {{"copy_gbps", r.ceiling_gbps}, {"matmul_tflops", null}}},
          {"peer", null},
          {"peer_time_ms", null},
          {"speedup_vs_peer", null},
          {"max_err_vs_peer", null},
          {"baseline_ms", r.baseline_ms ? nlohmann::json(*r.baseline_ms) : null},
          {"regression", r.baseline_ms && r.timing.median_ms > *r.baseline_ms * (1 + kRegression)},
          {"commit", commit},
          {"date", date}};
      if (r.backend == "cpu") rec["threads"] = core::max_threads();
      arr.push_back(rec);
    }
    std::ofstream f(o.json);
    f << arr.dump(2) << "\n";
    return static_cast<bool>(f);
  };

  for (const auto& folder : folders_of(ops)) {
    const std::string path = dir + "/" + folder + "/perf.yaml";
    CaseFile file;
    try {
      file = load_case_file(path, FileKind::perf, schema);
    } catch (const CaseFileError& e) {
      std::cerr << "error: " << e.what() << "\n";
      ++errors;
      continue;
    }
    std::map<std::string, std::map<std::string, Baseline>> updated = file.baselines;
    std::map<std::string, std::map<std::string, double>> updated_gbps;
    bool touched = false;

    for (const CaseRow& row : expand(file)) {
      const CaseSpec& cs = *row.spec;
      if (std::find(ops.begin(), ops.end(), row.op) == ops.end()) continue;
      if (o.quick && cs.tags.count("large")) continue;
      if (!o.shape_ids.empty() &&
          std::find(o.shape_ids.begin(), o.shape_ids.end(), cs.id) == o.shape_ids.end())
        continue;
      const Driver* d = driver_for(row.op);
      const DType dtype = row.dtype.value_or(d->default_dtype(row.op));
      if (!o.dtypes.empty() && std::find(o.dtypes.begin(), o.dtypes.end(),
                                         std::string(dtype_name(dtype))) == o.dtypes.end())
        continue;
      std::optional<Problem> problem;
      Status make_status;
      for (DeviceType bt : backends) {
        const std::string bname = backend_name(bt);
        if (!cs.backends.empty() && !cs.backends.count(bname)) continue;
        if (!o.impl.empty()) {
          const auto ids = impl_ids(row.op, bt);
          if (std::find(ids.begin(), ids.end(), o.impl) == ids.end()) continue;
        }
        Record r;
        r.op = row.op;
        r.case_id = cs.id;
        r.backend = bname;
        r.device = device_name(bt);
        r.dtype = std::string(dtype_name(dtype));
        try {
          if (!ceilings.count(bt)) {
            double g = 0;
            if (Status s = copy_ceiling(bt, &g); !s.ok()) {
              std::cerr << "recops bench: copy ceiling on " << bname << ": " << s.message() << "\n";
              return 2;
            }
            ceilings[bt] = g;
            std::cerr << "[bench] copy ceiling " << bname << " (" << device_name(bt)
                      << "): " << fmt_g(g, 4) << " GB/s\n";
          }
          r.ceiling_gbps = ceilings[bt];
          if (!problem) {
            problem.emplace();
            make_status = d->make(row, &*problem);
          }
          if (!make_status.ok()) throw Error(make_status);
          const Problem& p = *problem;
          if (!p.shape_error.ok()) throw Error(p.shape_error);
          r.shape = nlohmann::json::object();
          for (const auto& [k, v] : p.sizes) r.shape[k] = v;
          if (cs.lengths && !cs.lengths->gen.empty()) r.shape["lengths"] = cs.lengths->gen;
          r.bytes = d->bytes(p);
          r.flops = d->flops(p);
          const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();

          // Rotated sets of (inputs, outputs, workspace).
          double set_bytes = 0;
          for (const auto& in : p.inputs) set_bytes += static_cast<double>(in.buf.nbytes());
          for (const auto& out : p.outputs) {
            double n = static_cast<double>(dtype_size(out.dtype));
            for (int64_t s : out.shape) n *= static_cast<double>(s);
            set_bytes += n;
          }
          int copies = 1;
          if (set_bytes < kRotateBytes)
            copies = static_cast<int>(
                std::clamp(std::ceil(2 * kRotateBytes / std::max(set_bytes, 1.0)), 2.0, 16.0));
          struct Set {
            std::vector<Input> in;
            std::vector<Tensor> out;
            Tensor ws;
          };
          std::vector<Set> sets(static_cast<size_t>(copies));
          for (auto& s : sets) {
            s.in = inputs_on(p.inputs, dev);
            s.out = alloc_outputs(p, dev);
            const size_t wb = d->workspace_bytes(p, views(s.in), views(s.out));
            if (wb) s.ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
          }
          std::string impl_used;
          auto call = [&](int k) {
            Set& s = sets[static_cast<size_t>(k) % sets.size()];
            Context ctx;
            ctx.impl = o.impl;
            ctx.impl_used = &impl_used;
            ctx.workspace = s.ws.defined() ? s.ws.data() : nullptr;
            ctx.workspace_bytes = s.ws.defined() ? static_cast<size_t>(s.ws.nbytes()) : 0;
            return d->run(p, views(s.in), views(s.out), ctx);
          };
          const int min_reps = o.min_reps > 0 ? o.min_reps : (bt == DeviceType::cuda ? 20 : 10);
          r.timing = time_calls(bt, bt == DeviceType::cuda ? 5 : 2, min_reps, o.max_seconds, call);
          if (!r.timing.status.ok()) throw Error(r.timing.status);
          r.impl = impl_used.empty() ? "-" : impl_used;
          const std::string key = baseline_key(row.op, cs.id, dtype);
          if (auto dv = file.baselines.find(r.device); dv != file.baselines.end())
            if (auto b = dv->second.find(key); b != dv->second.end())
              r.baseline_ms = b->second.time_ms;
          if (r.baseline_ms && r.timing.median_ms > *r.baseline_ms * (1 + kRegression))
            ++regressions;
          if (o.update_baseline) {
            updated[r.device][key] = Baseline{r.timing.median_ms, commit, date};
            updated_gbps[r.device][key] = r.bytes / (r.timing.median_ms * 1e6);
            touched = true;
          }
        } catch (const std::exception& e) {
          r.error = e.what();
          ++errors;
        }
        records.push_back(r);
        // Progress on stderr, one line per shape, as it is measured.
        if (r.error.empty())
          std::cerr << "[bench] " << r.op << " " << r.case_id << " " << r.dtype << " " << r.backend
                    << ": " << fmt_g(r.timing.median_ms, 4) << " ms, "
                    << fmt_g(r.bytes / (r.timing.median_ms * 1e6), 4) << " GB/s\n";
        else
          std::cerr << "[bench] " << r.op << " " << r.case_id << " " << r.dtype << " " << r.backend
                    << ": error: " << r.error << "\n";
        (void)write_json();
      }
    }
    if (touched) {
      if (Status s = write_baselines(file, updated, updated_gbps); !s.ok()) {
        std::cerr << "recops bench: " << s.message() << "\n";
        ++errors;
      } else {
        std::cout << "updated baselines in " << path << "\n";
      }
    }
  }

  Table t({"op", "shape", "dtype", "backend", "impl", "time ms", "p10-p90 ms", "GB/s", "GFLOP/s",
           "% copy", "baseline ms", "change"});
  for (const auto& r : records) {
    if (!r.error.empty()) {
      t.add({r.op, r.case_id, r.dtype, r.backend, "-", "ERROR", "", "", "", "", "", ""});
      continue;
    }
    const double gbps = r.bytes / (r.timing.median_ms * 1e6);
    std::string change = "-";
    if (r.baseline_ms) {
      const double c = r.timing.median_ms / *r.baseline_ms - 1;
      change = (c >= 0 ? "+" : "") + fmt_g(100 * c, 3) + "%";
      if (c > kRegression) change += " REGRESSION";
    }
    t.add({r.op, r.case_id, r.dtype, r.backend, r.impl, fmt_g(r.timing.median_ms, 4),
           fmt_g(r.timing.p10_ms, 3) + "-" + fmt_g(r.timing.p90_ms, 3), fmt_g(gbps, 4),
           r.flops >= 0 ? fmt_g(r.flops / (r.timing.median_ms * 1e6), 4) : "-",
           fmt_g(100 * gbps / r.ceiling_gbps, 3), r.baseline_ms ? fmt_g(*r.baseline_ms, 4) : "-",
           change});
  }
  for (const auto& [bt, g] : ceilings)
    std::cout << "copy ceiling (" << backend_name(bt) << ", " << device_name(bt)
              << "): " << fmt_g(g, 4) << " GB/s\n";
  std::cout << t.str();
  for (const auto& r : records)
    if (!r.error.empty())
      std::cout << "error: " << r.op << " " << r.case_id << " [" << r.backend << "]: " << r.error
                << "\n";
  const double secs = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::cout << "\n"
            << records.size() << " shape(s), " << regressions << " regression(s) over "
            << static_cast<int>(kRegression * 100) << "%, " << errors << " error(s) ("
            << fmt_g(secs, 3) << " s; commit " << commit << ")\n";

  if (!o.json.empty() && !write_json()) {
    std::cerr << "recops bench: cannot write " << o.json << "\n";
    return 2;
  }
  if (o.fail_on_regression && regressions) return 1;
  return errors ? 1 : 0;
}

}  // namespace recops::cli
