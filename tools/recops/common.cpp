// tools/recops/common.cpp
#include "tools/recops/common.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/cpu_features.h"
#include "core/cuda/runtime.h"
#include "recops/registry.h"

#ifndef RECOPS_SOURCE_DIR_DEFAULT
#define RECOPS_SOURCE_DIR_DEFAULT ""
#endif
#ifndef RECOPS_BUILD_COMMIT
#define RECOPS_BUILD_COMMIT "unknown"
#endif

namespace fs = std::filesystem;

namespace recops::cli {
namespace {

// DIR itself when it holds op folders (with a cases.yaml or a perf.yaml), DIR/src/ops when DIR is a
// repository root, else "".
std::string as_ops_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir / "src" / "ops", ec)) return (dir / "src" / "ops").string();
  if (fs::is_directory(dir, ec)) {
    for (const auto& d : drivers())
      if (fs::exists(dir / d->folder() / "cases.yaml", ec) ||
          fs::exists(dir / d->folder() / "perf.yaml", ec))
        return dir.string();
  }
  return {};
}

std::string run_capture(const std::string& cmd, int* status) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) {
    *status = -1;
    return out;
  }
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), f)) out += buf.data();
  *status = pclose(f);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

}  // namespace

std::string ops_dir(const std::string& cases_dir_option) {
  if (!cases_dir_option.empty()) {
    std::string d = as_ops_dir(cases_dir_option);
    if (d.empty())
      throw std::invalid_argument("--cases-dir " + cases_dir_option +
                                  ": neither an src/ops directory nor a repository root");
    return d;
  }
  if (const char* env = std::getenv("RECOPS_SOURCE_DIR"); env && *env) {
    std::string d = as_ops_dir(env);
    if (d.empty())
      throw std::invalid_argument(std::string("RECOPS_SOURCE_DIR=") + env + ": no src/ops there");
    return d;
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build*/bin/recops, or deeper (build*/tools/recops/...): walk up a few levels.
    fs::path p = exe.parent_path();
    for (int i = 0; i < 4 && !p.empty(); ++i, p = p.parent_path()) {
      std::string d = as_ops_dir(p);
      if (!d.empty() && fs::exists(fs::path(d) / ".." / ".." / "CMakeLists.txt", ec)) return d;
    }
  }
  std::string d = as_ops_dir(RECOPS_SOURCE_DIR_DEFAULT);
  if (d.empty())
    throw std::invalid_argument(
        "cannot find the case files: pass --cases-dir or set RECOPS_SOURCE_DIR to the repository "
        "root");
  return d;
}

// `--op` takes an op, an op folder ("jagged/cumsum" or its last part "cumsum") or a family
// ("jagged").
static bool folder_matches(const std::string& folder, const std::string& r) {
  const auto slash = folder.find('/');
  return folder == r || folder.substr(0, slash) == r ||
         (slash != std::string::npos && folder.substr(slash + 1) == r);
}

std::vector<std::string> select_ops(const std::vector<std::string>& requested) {
  std::vector<std::string> all;
  for (const auto& d : drivers())
    for (const auto& o : d->ops()) all.push_back(o);
  if (requested.empty()) return all;
  std::vector<std::string> out;
  for (const auto& r : requested) {
    bool found = false;
    for (const auto& d : drivers())
      for (const auto& o : d->ops())
        if (o == r || folder_matches(d->folder(), r)) {
          found = true;
          if (std::find(out.begin(), out.end(), o) == out.end()) out.push_back(o);
        }
    if (!found) {
      std::string known;
      for (const auto& o : all) known += (known.empty() ? "" : ", ") + o;
      throw std::invalid_argument("unknown op or family '" + r + "' (known: " + known + ")");
    }
  }
  // Keep the stable driver order.
  std::vector<std::string> ordered;
  for (const auto& o : all)
    if (std::find(out.begin(), out.end(), o) != out.end()) ordered.push_back(o);
  return ordered;
}

std::vector<std::string> folders_of(const std::vector<std::string>& ops) {
  std::vector<std::string> out;
  for (const auto& d : drivers()) {
    bool any = false;
    for (const auto& o : d->ops()) any = any || std::find(ops.begin(), ops.end(), o) != ops.end();
    if (any && std::find(out.begin(), out.end(), d->folder()) == out.end())
      out.push_back(d->folder());
  }
  return out;
}

std::string backend_unavailable(DeviceType backend) {
  if (backend == DeviceType::cpu) return {};
  if (!core::cuda::built_with_cuda())
    return "this build has no CUDA backend (RECOPS_WITH_CUDA=OFF)";
  if (core::cuda::device_count() == 0) return "no CUDA device visible";
  return {};
}

bool check_dtype_names(const char* command, const RowFilterOptions& o) {
  const std::pair<const char*, const std::vector<std::string>*> lists[] = {
      {"--dtype", &o.dtypes},
      {"--offsets-dtype", &o.offsets_dtypes},
      {"--out-dtype", &o.out_dtypes}};
  for (const auto& [flag, lst] : lists)
    for (const auto& s : *lst) {
      const auto t = dtype_from_name(s);
      if (!t) {
        std::cerr << "recops " << command << ": " << flag << ": unknown dtype '" << s
                  << "' (fp64 fp32 fp16 bf16 fp8_e4m3 int32 int64 uint8 bool)\n";
        return false;
      }
      if (std::string(flag) == "--offsets-dtype" && *t != DType::int32 && *t != DType::int64) {
        std::cerr << "recops " << command << ": --offsets-dtype: offsets are int32 or int64, got '"
                  << s << "'\n";
        return false;
      }
    }
  return true;
}

bool select(const char* command, const std::string& cases_dir, const std::vector<std::string>& ops,
            const std::vector<std::string>& backends, Selection* sel, const std::string& impl) {
  try {
    sel->dir = ops_dir(cases_dir);
    sel->ops = select_ops(ops);
  } catch (const std::exception& e) {
    std::cerr << "recops " << command << ": " << e.what() << "\n";
    return false;
  }
  std::string err;
  sel->backends = select_backends(backends, &err);
  if (!err.empty()) {
    std::cerr << "recops " << command << ": " << err << "\n";
    return false;
  }
  if (impl.empty()) return true;
  std::set<std::string> known;
  for (const auto& op : sel->ops)
    for (DeviceType bt : sel->backends)
      for (const auto& id : impl_ids(op, bt)) known.insert(id);
  if (known.count(impl)) return true;
  std::cerr << "recops " << command << ": --impl " << impl
            << " is not an implementation of the selected ops on the selected backends (they have:";
  for (const auto& id : known) std::cerr << " " << id;
  std::cerr << ")\n";
  return false;
}

bool ids_known(const char* command, const char* what, const std::vector<CaseFile>& files,
               const Selection& sel, const std::vector<std::string>& wanted) {
  std::set<std::string> ids;
  for (const CaseFile& f : files)
    for (const CaseRow& row : expand(f))
      if (std::find(sel.ops.begin(), sel.ops.end(), row.op) != sel.ops.end())
        ids.insert(row.spec->id);
  for (const auto& id : wanted) {
    if (ids.count(id)) continue;
    std::cerr << "recops " << command << ": no " << what << " '" << id
              << "' among the selected ops (they have:";
    for (const auto& k : ids) std::cerr << " " << k;
    std::cerr << ")\n";
    return false;
  }
  return true;
}

std::vector<DeviceType> select_backends(const std::vector<std::string>& requested,
                                        std::string* error) {
  std::vector<DeviceType> out;
  if (requested.empty()) {
    out.push_back(DeviceType::cpu);
    if (backend_unavailable(DeviceType::cuda).empty()) out.push_back(DeviceType::cuda);
    return out;
  }
  for (const auto& b : requested) {
    const DeviceType t = b == "cuda" ? DeviceType::cuda : DeviceType::cpu;
    if (b != "cpu" && b != "cuda") {
      *error = "unknown backend '" + b + "' (cpu, cuda)";
      return {};
    }
    if (std::string why = backend_unavailable(t); !why.empty()) {
      *error = "backend " + b + " cannot run here: " + why;
      return {};
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

std::vector<std::string> impl_ids(const std::string& op, DeviceType backend) {
  std::vector<std::string> ids;
  for (const auto& info : list_ops())
    if (info.name == op)
      for (const auto& im : info.impls)
        if (im.backend == backend) ids.push_back(im.id);
  return ids;
}

bool selected(const std::vector<std::string>& wanted, const std::string& name) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), name) != wanted.end();
}

bool row_selected(const CaseRow& row, const RowFilter& filter) {
  const CaseSpec& cs = *row.spec;
  if (std::find(filter.ops.begin(), filter.ops.end(), row.op) == filter.ops.end()) return false;
  if (!selected(filter.ids, cs.id) || ((filter.quick || filter.smoke) && cs.tags.count("large")))
    return false;
  if (filter.smoke &&
      ((!cs.dtypes.empty() && row.dtype != cs.dtypes.front()) ||
       (!cs.offsets_dtypes.empty() && row.offsets_dtype != cs.offsets_dtypes.front()) ||
       (!cs.out_dtypes.empty() && row.out_dtype != cs.out_dtypes.front())))
    return false;
  const DType dtype = row.dtype.value_or(driver_for(row.op)->default_dtype(row.op));
  if (!selected(filter.dtypes, std::string(dtype_name(dtype)))) return false;
  if (filter.shards > 1) {
    std::string key = row.op + '\n' + cs.id + '\n' + std::string(dtype_name(dtype)) + '\n';
    if (!cs.offsets_dtypes.empty()) key += std::string(dtype_name(row.offsets_dtype));
    key += '\n';
    if (row.out_dtype) key += std::string(dtype_name(*row.out_dtype));
    uint64_t h = 1469598103934665603ull;  // FNV-1a offset basis
    for (const unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    if (h % static_cast<uint64_t>(filter.shards) != static_cast<uint64_t>(filter.shard))
      return false;
  }
  if (!filter.offsets_dtypes.empty() &&
      (cs.offsets_dtypes.empty() ||
       !selected(filter.offsets_dtypes, std::string(dtype_name(row.offsets_dtype)))))
    return false;
  return filter.out_dtypes.empty() ||
         (row.out_dtype && selected(filter.out_dtypes, std::string(dtype_name(*row.out_dtype))));
}

bool backend_selected(const CaseRow& row, DeviceType backend, const std::string& impl) {
  if (!row.spec->backends.empty() && !row.spec->backends.count(backend_name(backend))) return false;
  if (impl.empty()) return true;
  const auto ids = impl_ids(row.op, backend);
  return std::find(ids.begin(), ids.end(), impl) != ids.end();
}

int64_t count_runs(const std::vector<CaseFile>& files, const RowFilter& filter,
                   const std::vector<DeviceType>& backends, const std::string& impl) {
  int64_t total = 0;
  for (const CaseFile& file : files)
    for (const CaseRow& row : expand(file))
      if (row_selected(row, filter))
        for (DeviceType bt : backends) total += backend_selected(row, bt, impl);
  return total;
}

Status replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << text;
    if (!f) return Status(StatusCode::invalid_argument, tmp + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status(StatusCode::invalid_argument, path + ": cannot replace");
  return Status::Ok();
}

std::string device_name(DeviceType backend) {
  if (backend == DeviceType::cuda) return core::cuda::device_name(0);
  std::string n = core::cpu_name();
  return n.empty() ? "cpu" : n;
}

std::string project_commit(const std::string& ops) {
  // A copy of the tree without git metadata (the device run) passes the commit in.
  if (const char* env = std::getenv("RECOPS_COMMIT"); env && *env) return env;
  const fs::path root = fs::path(ops).parent_path().parent_path();
  std::error_code ec;
  if (fs::exists(root / ".git", ec)) {
    int st = 0;
    const std::string q = shell_word(root.string());
    std::string c = run_capture("git -C " + q + " rev-parse --short=12 HEAD 2>/dev/null", &st);
    if (st == 0 && !c.empty()) {
      int dirty = 0;
      run_capture("git -C " + q + " diff-index --quiet HEAD -- 2>/dev/null", &dirty);
      return dirty == 0 ? c : c + "+dirty";
    }
  }
  return RECOPS_BUILD_COMMIT;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of(
                        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string Table::str() const {
  std::vector<size_t> w;
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size(); ++i) {
      if (w.size() <= i) w.push_back(0);
      w[i] = std::max(w[i], r[i].size());
    }
  std::ostringstream os;
  for (size_t k = 0; k < rows_.size(); ++k) {
    const auto& r = rows_[k];
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      line += r[i];
      if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 2, ' ');
    }
    os << line << "\n";
    if (k == 0) {
      size_t total = 0;
      for (size_t i = 0; i < w.size(); ++i) total += w[i] + (i + 1 < w.size() ? 2 : 0);
      os << std::string(total, '-') << "\n";
    }
  }
  return os.str();
}

std::string fmt_g(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", precision, v);
  return buf;
}

namespace {
double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
std::string fmt_duration(double s) {
  if (s < 60) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f s", s);
    return b;
  }
  const auto m = static_cast<int64_t>(s / 60);
  if (m < 60) return std::to_string(m) + "m" + std::to_string(static_cast<int64_t>(s) % 60) + "s";
  return std::to_string(m / 60) + "h" + std::to_string(m % 60) + "m";
}
}  // namespace

Progress::Progress(std::string what, int64_t total, bool quiet)
    : what_(std::move(what)),
      total_(total),
      active_(!quiet && total > 0),
      tty_(isatty(2) != 0),
      start_(now_s()) {}

// On a terminal one line redrawn at most 10 times a second; elsewhere (CI logs, a pipe) a plain
// line every 5 s, so that a long run shows it is alive and where it is.
void Progress::step(const std::string& label) {
  ++done_;
  if (!active_) return;
  const double t = now_s(), el = t - start_;
  if (tty_ && done_ < total_ && t - last_draw_ < 0.1) return;
  if (!tty_ && (done_ == total_ || t - (last_draw_ < 0 ? start_ : last_draw_) < 5.0)) return;
  last_draw_ = t;
  std::string line = "[" + what_ + "] " + std::to_string(done_) + "/" + std::to_string(total_) +
                     ", " + fmt_duration(el) + " elapsed";
  if (done_ < total_)
    line += ", ETA " +
            fmt_duration(el / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  line += "  " + label;
  if (line.size() > 118) line = line.substr(0, 115) + "...";
  if (tty_)
    std::cerr << "\r\033[K" << line << std::flush;
  else
    std::cerr << line << std::endl;
}

void Progress::finish() {
  if (active_ && tty_ && last_draw_ >= 0) std::cerr << "\r\033[K" << std::flush;
  active_ = false;
}

CpuLoadSample cpu_load_sample() {
  CpuLoadSample s;
  std::ifstream f("/proc/stat");
  std::string cpu;
  // user nice system idle iowait irq softirq steal (guest time is inside user and nice).
  long long v[8] = {};
  if (!(f >> cpu) || cpu != "cpu") return s;
  for (auto& x : v)
    if (!(f >> x)) return s;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  if (tick <= 0) return s;
  long long busy = 0;
  for (int i = 0; i < 8; ++i)
    if (i != 3 && i != 4) busy += v[i];
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  s.self_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
  s.busy_s = static_cast<double>(busy) / tick;
  s.wall_s = now_s();
  s.ok = true;
  return s;
}

double others_busy_cores(const CpuLoadSample& a, const CpuLoadSample& b) {
  const double wall = b.wall_s - a.wall_s;
  if (!a.ok || !b.ok || wall <= 0) return 0;
  return std::max(0.0, (b.busy_s - a.busy_s) - (b.self_s - a.self_s)) / wall;
}

void warn_if_cores_busy(const CpuLoadSample& a, const CpuLoadSample& b, const char* when) {
  const double others = others_busy_cores(a, b);
  if (others <= 0.5) return;
  const unsigned n = std::thread::hardware_concurrency();
  std::cerr << "recops bench: warning: other processes kept " << fmt_g(others, 2) << " of "
            << (n ? std::to_string(n) : std::string("the")) << " cores busy " << when
            << " (/proc/stat): CPU times are slower and noisier than on an idle machine\n";
}

std::vector<CaseFile> load_case_files(const Selection& sel, const char* file_name, FileKind kind,
                                      const CaseSchema& schema, int* errors) {
  std::vector<CaseFile> files;
  for (const auto& folder : folders_of(sel.ops)) {
    try {
      files.push_back(load_case_file(sel.dir + "/" + folder + "/" + file_name, kind, schema));
    } catch (const CaseFileError& e) {
      std::cerr << "error: " << e.what() << "\n";
      ++*errors;
    }
  }
  return files;
}

}  // namespace recops::cli
