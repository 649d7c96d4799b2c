// tools/recops/cmd_bench.cpp: `recops bench`: times each selected op's perf.yaml shapes
// (performance.md) and reports GB/s against the copy ceiling measured in the same run, and the
// change against the baseline stored for this device.
//
// CPU: wall time per call, all cores, warm-up, median of repeats. CUDA: CUDA events around each
// call, warm-up, median of >= 20. Inputs (with their outputs) rotate among several copies when
// one set fits in 50 MB, so caches do not flatter small shapes.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sys/resource.h>

#include <chrono>
#include <thread>
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
#include "tools/recops/timing.h"

namespace recops::cli {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kRotateBytes = 50e6;  // performance.md: rotate when a set fits in 50 MB

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

// Peak memory of one call: what it adds at its peak over what was resident before (outputs,
// workspace and anything the op allocates). CPU: the process's peak RSS, reset through
// /proc/self/clear_refs (else getrusage's maxrss, which only sees a new process-wide peak); CUDA:
// cudaMemGetInfo sampled before, after allocation and after the call.
struct HostMem {
  int64_t rss = -1, hwm = -1;  // bytes
};

HostMem host_mem() {
  HostMem m;
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);) {
    int64_t* dst = line.rfind("VmRSS:", 0) == 0   ? &m.rss
                   : line.rfind("VmHWM:", 0) == 0 ? &m.hwm
                                                  : nullptr;
    if (dst) *dst = std::atoll(line.c_str() + 6) * 1024;
  }
  return m;
}

bool reset_host_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.close();
  return static_cast<bool>(f);
}

int64_t maxrss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

struct Memory {
  std::optional<int64_t> peak_bytes;
  std::string how;  // vmhwm, maxrss or cudaMemGetInfo
};

// `call(out, ws)` runs the op once into freshly allocated outputs and workspace.
template <class Alloc, class Call>
Memory measure_memory(DeviceType backend, Alloc&& alloc, Call&& call) {
  Memory m;
  if (backend == DeviceType::cpu) {
    const bool reset = reset_host_peak();
    const HostMem before = host_mem();
    const int64_t maxrss_before = maxrss_bytes();
    {
      auto bufs = alloc();
      if (!call(bufs).ok()) return m;
      if (reset && before.rss >= 0) {
        const HostMem after = host_mem();
        m.peak_bytes = std::max<int64_t>(0, after.hwm - before.rss);
        m.how = "vmhwm";
      } else {
        m.peak_bytes = std::max<int64_t>(0, maxrss_bytes() - maxrss_before);
        m.how = "maxrss";
      }
    }
    return m;
  }
  size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
  if (!core::cuda::synchronize(0).ok() || !core::cuda::mem_get_info(0, &free0, &total).ok())
    return m;
  auto bufs = alloc();
  if (!core::cuda::mem_get_info(0, &free1, &total).ok()) return m;
  if (!call(bufs).ok() || !core::cuda::synchronize(0).ok() ||
      !core::cuda::mem_get_info(0, &free2, &total).ok())
    return m;
  m.peak_bytes = static_cast<int64_t>(free0) - static_cast<int64_t>(std::min(free1, free2));
  m.how = "cudaMemGetInfo";
  return m;
}

// Reference times from a `bench --json` file: "op|case|dtype|backend" -> time_ms.
Status load_against(const std::string& path, std::map<std::string, double>* out) {
  std::ifstream f(path);
  if (!f) return Status(StatusCode::invalid_argument, path + ": cannot read");
  try {
    const nlohmann::json arr = nlohmann::json::parse(f);
    if (!arr.is_array()) return Status(StatusCode::invalid_argument, path + ": not a JSON list");
    for (const auto& r : arr) {
      if (r.value("phase", "fwd") != "fwd" || !r.contains("time_ms") || !r["time_ms"].is_number())
        continue;
      const std::string key = r.at("op").get<std::string>() + "|" + r.value("case", std::string()) +
                              "|" + r.at("dtype").get<std::string>() + "|" +
                              r.value("backend", std::string("cuda"));
      (*out)[key] = r["time_ms"].get<double>();
    }
  } catch (const std::exception& e) {
    return Status(StatusCode::invalid_argument, path + ": " + e.what());
  }
  return Status::Ok();
}

struct Record {
  std::string op, case_id, impl, backend, device, dtype;
  nlohmann::json shape;
  Timing timing;
  double bytes = 0, flops = -1, ceiling_gbps = 0;
  std::optional<double> baseline_ms;  // the reference time (--against, else perf.yaml)
  double output_bytes = 0;
  Memory memory;
  std::optional<double> memory_limit;  // bytes, from perf.yaml max_memory
  TuneUsed tune;                       // a tunable implementation's configuration (empty otherwise)
  std::string error;
  bool regression(double threshold) const {
    return baseline_ms && timing.median_ms > *baseline_ms * (1 + threshold);
  }
  bool memory_exceeded() const {
    return memory_limit && memory.peak_bytes &&
           static_cast<double>(*memory.peak_bytes) > *memory_limit;
  }
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
  return replace_file(file.path, out.str());
}

}  // namespace

int run_bench(const BenchOptions& o) {
  const auto t_start = Clock::now();
  Selection sel;
  if (!select("bench", o.cases_dir, o.ops, o.backends, &sel, o.impl)) return 2;
  // Other processes on the cores this run times: a short look now, and the whole run at the end.
  const CpuLoadSample load_start = cpu_load_sample();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const CpuLoadSample load_run = cpu_load_sample();
  warn_if_cores_busy(load_start, load_run, "before the run");
  const double threshold = o.threshold_pct / 100.0;
  const bool against_file = !o.against.empty() && o.against != "baseline";
  std::map<std::string, double> against;
  if (against_file) {
    if (Status s = load_against(o.against, &against); !s.ok()) {
      std::cerr << "recops bench: --against " << s.message() << "\n";
      return 2;
    }
  }
  const std::string against_name = against_file ? o.against : "perf.yaml baseline";
  const std::string commit = project_commit(sel.dir);
  const std::string date = today();
  const CaseSchema schema = case_schema();
  std::map<DeviceType, double> ceilings;
  std::vector<Record> records;
  int errors = 0, regressions = 0, memory_violations = 0;

  // Results are data (habit 12): the JSON file is rewritten after every shape, so that a run cut
  // short by a time limit still leaves what it measured.
  auto write_json = [&]() -> bool {
    if (o.json.empty()) return true;
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : records) {
      if (!r.error.empty()) continue;
      const double gbps = r.bytes / (r.timing.median_ms * 1e6);
      const nlohmann::json null;
      nlohmann::json rec =
          record_key<nlohmann::json>(r.op, r.case_id, r.dtype, r.backend, r.device, r.impl);
      rec.update(nlohmann::json{
          {"shape", r.shape},
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
          {"against", r.baseline_ms ? nlohmann::json(against_name) : null},
          {"regression", r.regression(threshold)},
          {"output_bytes", r.output_bytes},
          {"peak_mem_bytes", r.memory.peak_bytes ? nlohmann::json(*r.memory.peak_bytes) : null},
          {"peak_mem_method", r.memory.how.empty() ? null : nlohmann::json(r.memory.how)},
          {"max_memory_bytes", r.memory_limit ? nlohmann::json(*r.memory_limit) : null},
          {"memory_ok", !r.memory_exceeded()},
          {"config", r.tune.source.empty() ? null : nlohmann::json(r.tune.config.str())},
          {"config_source", r.tune.source.empty() ? null : nlohmann::json(r.tune.source)},
          {"tuning_bucket", r.tune.source.empty() ? null : nlohmann::json(r.tune.bucket)},
          {"commit", commit},
          {"date", date}});
      if (r.backend == "cpu") rec["threads"] = core::max_threads();
      arr.push_back(rec);
    }
    std::ofstream f(o.json);
    f << arr.dump(2) << "\n";
    return static_cast<bool>(f);
  };

  std::vector<CaseFile> files = load_case_files(sel, "perf.yaml", FileKind::perf, schema, &errors);
  if (!ids_known("bench", "shape", files, sel, o.shape_ids)) return 2;
  // The filters: a shape runs when it passes them, on each backend its entry allows.
  const RowFilter filter{sel.ops, o.shape_ids, o.dtypes, {}, {}, o.quick};
  const int64_t total = count_runs(files, filter, sel.backends, o.impl);
  Progress progress("bench", total, o.quiet);

  for (const CaseFile& file : files) {
    const std::string& path = file.path;
    std::map<std::string, std::map<std::string, Baseline>> updated = file.baselines;
    std::map<std::string, std::map<std::string, double>> updated_gbps;
    bool touched = false;

    for (const CaseRow& row : expand(file)) {
      const CaseSpec& cs = *row.spec;
      if (!row_selected(row, filter)) continue;
      const Driver* d = driver_for(row.op);
      const DType dtype = row.dtype.value_or(d->default_dtype(row.op));
      std::optional<Problem> problem;
      Status make_status;
      for (DeviceType bt : sel.backends) {
        if (!backend_selected(row, bt, o.impl)) continue;
        const std::string bname = backend_name(bt);
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
            if (!o.quiet)
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
          const double set_bytes = cli::set_bytes(p);
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
            ctx.tune_used = &r.tune;
            ctx.workspace = s.ws.defined() ? s.ws.data() : nullptr;
            ctx.workspace_bytes = s.ws.defined() ? static_cast<size_t>(s.ws.nbytes()) : 0;
            return d->run(p, views(s.in), views(s.out), ctx);
          };
          r.timing = time_op(bt, o.min_reps, o.max_seconds, call);
          if (!r.timing.status.ok()) throw Error(r.timing.status);
          r.impl = impl_used.empty() ? "-" : impl_used;
          // Peak memory of one more call into fresh outputs, and the case's bound on it.
          for (const auto& out : p.outputs) {
            double n = static_cast<double>(dtype_size(out.dtype));
            for (int64_t x : out.shape) n *= static_cast<double>(x);
            r.output_bytes += n;
          }
          r.memory = measure_memory(
              bt,
              [&] {
                Set s;
                s.out = alloc_outputs(p, dev);
                const size_t wb = d->workspace_bytes(p, views(sets[0].in), views(s.out));
                if (wb) s.ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
                return s;
              },
              [&](Set& s) {
                Context ctx;
                ctx.impl = o.impl;
                ctx.workspace = s.ws.defined() ? s.ws.data() : nullptr;
                ctx.workspace_bytes = s.ws.defined() ? static_cast<size_t>(s.ws.nbytes()) : 0;
                return d->run(p, views(sets[0].in), views(s.out), ctx);
              });
          if (cs.max_memory_x_output) r.memory_limit = *cs.max_memory_x_output * r.output_bytes;
          if (cs.max_memory_bytes)
            r.memory_limit =
                std::min(r.memory_limit.value_or(1e300), static_cast<double>(*cs.max_memory_bytes));
          if (r.memory_exceeded()) ++memory_violations;
          if (r.memory_limit && !r.memory.peak_bytes)
            std::cerr << "[bench] " << r.op << " " << r.case_id
                      << ": max_memory not checked (no memory measurement on this platform)\n";
          const std::string key = baseline_key(row.op, cs.id, dtype);
          if (against_file) {
            if (auto a = against.find(row.op + "|" + cs.id + "|" + r.dtype + "|" + bname);
                a != against.end())
              r.baseline_ms = a->second;
          } else if (auto dv = file.baselines.find(r.device); dv != file.baselines.end()) {
            if (auto b = dv->second.find(key); b != dv->second.end())
              r.baseline_ms = b->second.time_ms;
          }
          if (r.regression(threshold)) ++regressions;
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
        // Progress on stderr: one rewritten line on a terminal, else one line per shape as it is
        // measured (the log of a CI run); nothing with --quiet.
        std::string line = r.op + " " + r.case_id + " " + r.dtype + " " + r.backend + ": ";
        line += r.error.empty() ? fmt_g(r.timing.median_ms, 4) + " ms, " +
                                      fmt_g(r.bytes / (r.timing.median_ms * 1e6), 4) + " GB/s"
                                : "error: " + r.error;
        if (r.tune.source == "tuned") line += " [tuned " + r.tune.config.str() + "]";
        // A terminal gets the redrawn progress line; a log gets every shape's line.
        if (progress.active() && progress.on_terminal())
          progress.step(line);
        else if (!o.quiet)
          std::cerr << "[bench] " << line << "\n";
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

  progress.finish();
  Table t({"op", "shape", "dtype", "backend", "impl", "time ms", "p10-p90 ms", "GB/s", "GFLOP/s",
           "% copy", "peak MiB (x out)", "ref ms", "change"});
  for (const auto& r : records) {
    if (!r.error.empty()) {
      t.add({r.op, r.case_id, r.dtype, r.backend, "-", "ERROR", "", "", "", "", "", "", ""});
      continue;
    }
    const double gbps = r.bytes / (r.timing.median_ms * 1e6);
    std::string change = "-";
    if (r.baseline_ms) {
      const double c = r.timing.median_ms / *r.baseline_ms - 1;
      change = (c >= 0 ? "+" : "") + fmt_g(100 * c, 3) + "%";
      if (c > threshold) change += " REGRESSION";
    }
    std::string mem = "-";
    if (r.memory.peak_bytes) {
      mem = fmt_g(static_cast<double>(*r.memory.peak_bytes) / (1 << 20), 3);
      if (r.output_bytes > 0)
        mem += " (" + fmt_g(static_cast<double>(*r.memory.peak_bytes) / r.output_bytes, 3) + ")";
      if (r.memory_exceeded()) mem += " OVER";
    }
    t.add({r.op, r.case_id, r.dtype, r.backend, r.impl, fmt_g(r.timing.median_ms, 4),
           fmt_g(r.timing.p10_ms, 3) + "-" + fmt_g(r.timing.p90_ms, 3), fmt_g(gbps, 4),
           r.flops >= 0 ? fmt_g(r.flops / (r.timing.median_ms * 1e6), 4) : "-",
           fmt_g(100 * gbps / r.ceiling_gbps, 3), mem,
           r.baseline_ms ? fmt_g(*r.baseline_ms, 4) : "-", change});
  }
  for (const auto& [bt, g] : ceilings)
    std::cout << "copy ceiling (" << backend_name(bt) << ", " << device_name(bt)
              << "): " << fmt_g(g, 4) << " GB/s\n";
  std::cout << t.str();
  for (const auto& r : records)
    if (!r.error.empty())
      std::cout << "error: " << r.op << " " << r.case_id << " [" << r.backend << "]: " << r.error
                << "\n";
  for (const auto& r : records)
    if (r.memory_exceeded())
      std::cout << "memory: " << r.op << " " << r.case_id << " " << r.dtype << " [" << r.backend
                << "]: peak " << *r.memory.peak_bytes << " bytes over the max_memory bound of "
                << fmt_g(*r.memory_limit, 6) << " bytes (" << r.memory.how << ")\n";
  warn_if_cores_busy(load_run, cpu_load_sample(), "during the run");
  const double secs = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::cout << "\n"
            << records.size() << " shape(s), " << regressions << " regression(s) over "
            << fmt_g(o.threshold_pct, 3) << "% against the " << against_name << ", "
            << memory_violations << " over max_memory, " << errors << " error(s) ("
            << fmt_g(secs, 3) << " s; commit " << commit << ")\n";

  if (!o.json.empty() && !write_json()) {
    std::cerr << "recops bench: cannot write " << o.json << "\n";
    return 2;
  }
  if (o.fail_on_regression && regressions) return 1;
  return errors || memory_violations ? 1 : 0;
}

}  // namespace recops::cli
