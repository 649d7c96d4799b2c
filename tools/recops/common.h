// tools/recops/common.h: what the subcommands share: where the case files live, which ops and
// backends a run selects, and run metadata (commit, date, device names).
#pragma once

#include <string>
#include <vector>

#include "recops/device.h"
#include "recops/status.h"
#include "tools/recops/casefile.h"
#include "tools/recops/commands.h"
#include "tools/recops/driver.h"

namespace recops::cli {

// The src/ops directory holding <folder>/cases.yaml and perf.yaml: --cases-dir (src/ops or the
// repository root), else $RECOPS_SOURCE_DIR (the repository root), else relative to the
// executable (build*/bin/recops -> ../../src/ops), else the source tree this binary was built from.
std::string ops_dir(const std::string& cases_dir_option);

// The op names a `--op` list selects: names match an op or a whole folder (family); empty = all.
// Unknown names throw std::invalid_argument.
std::vector<std::string> select_ops(const std::vector<std::string>& requested);

// Folders (in driver order) holding at least one selected op.
std::vector<std::string> folders_of(const std::vector<std::string>& ops);

// Backends a run covers: the requested ones, or cpu plus cuda when a device is visible.
std::vector<DeviceType> select_backends(const std::vector<std::string>& requested,
                                        std::string* error);

// What a subcommand runs over: the ops folder, the selected ops and backends. Fills `sel` and
// returns true, or prints "recops <command>: <reason>" to stderr and returns false (exit 2).
struct Selection {
  std::string dir;
  std::vector<std::string> ops;
  std::vector<DeviceType> backends;
};
// `impl` (when not empty) must be an implementation of a selected op on a selected backend; else
// the error lists the ones there are.
bool select(const char* command, const std::string& cases_dir, const std::vector<std::string>& ops,
            const std::vector<std::string>& backends, Selection* sel, const std::string& impl = {});

// The dtype filters (--dtype, --offsets-dtype, --out-dtype) name dtypes, and --offsets-dtype an
// integer one (offsets are int32 or int64); else an error on stderr naming the flag, and false.
bool check_dtype_names(const char* command, const RowFilterOptions& o);

// Every id of `wanted` (case or shape ids of --case / --shape) names a row of `files`; else an
// error on stderr listing the ids there are, and false.
bool ids_known(const char* command, const char* what, const std::vector<CaseFile>& files,
               const Selection& sel, const std::vector<std::string>& wanted);

// The case files (`file_name`: cases.yaml or perf.yaml) of the selected ops' folders under `dir`.
// A file that does not load is reported on stderr and counted in *errors; the others still load.
std::vector<CaseFile> load_case_files(const Selection& sel, const char* file_name, FileKind kind,
                                      const CaseSchema& schema, int* errors);

// "" when `backend` can run here, else the reason.
std::string backend_unavailable(DeviceType backend);

// The implementation ids of `op` for `backend` as list_ops() reports them.
std::vector<std::string> impl_ids(const std::string& op, DeviceType backend);

// True when `wanted` is empty (no filter) or holds `name`.
bool selected(const std::vector<std::string>& wanted, const std::string& name);

// Which rows of the expanded case files a run takes; an empty list selects any.
struct RowFilter {
  std::vector<std::string> ops;             // the run's ops (Selection::ops): the row's is one
  std::vector<std::string> ids;             // --case (or --shape) ids
  std::vector<std::string> dtypes;          // the row's dtype, else its op's default
  std::vector<std::string> offsets_dtypes;  // rows whose case lists one of these offsets dtypes
  std::vector<std::string> out_dtypes;      // rows whose case lists one of these out_dtypes
  bool quick = false;                       // skip cases tagged `large`
  // check --smoke: every case but the `large` ones, once, in its first dtype, offsets dtype and
  // out_dtype (make run's CPU check; the whole matrix stays in make test).
  bool smoke = false;
  // check --shard K/N: only the rows whose key (op, case id, dtype, offsets dtype, out_dtype)
  // hashes (FNV-1a, 64 bit) to K - 1 modulo N; the N shards partition the selection (ctest runs
  // a large family's quick check as N tests side by side).
  int shard = 0;   // K - 1
  int shards = 1;  // N
};
bool row_selected(const CaseRow& row, const RowFilter& filter);

// Whether `row` runs on `backend`: its case allows the backend and, when `impl` is not empty, its
// op has that implementation there.
bool backend_selected(const CaseRow& row, DeviceType backend, const std::string& impl);

// How many (row, backend) runs the rows of `files` give under those two (a progress total).
int64_t count_runs(const std::vector<CaseFile>& files, const RowFilter& filter,
                   const std::vector<DeviceType>& backends, const std::string& impl);

// The device name results are keyed by: the CPU model, or the CUDA device's name.
std::string device_name(DeviceType backend);

// The project commit ($RECOPS_COMMIT when set, else git at run time when the source tree is a
// checkout, else the commit the binary was built from); "+dirty" when tracked files differ from it.
std::string project_commit(const std::string& ops_dir);
// Today's date (UTC), YYYY-MM-DD.
std::string today();

// Writes `text` to path + ".tmp", then renames it over `path` (a reader never sees half a file).
Status replace_file(const std::string& path, const std::string& text);

// Shell-quotes a word when it needs it.
std::string shell_word(const std::string& s);

// A plain text table with left-aligned columns.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;
  size_t size() const { return rows_.size() - 1; }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string fmt_g(double v, int precision = 3);

// Progress of a long run on stderr (done/total, elapsed, ETA, the last item), unless `quiet`: on a
// terminal one rewritten line; elsewhere (CI logs, pipes) a plain line every 5 s.
class Progress {
 public:
  Progress(std::string what, int64_t total, bool quiet);
  ~Progress() { finish(); }
  bool active() const { return active_; }
  bool on_terminal() const { return tty_; }
  // One more item done; `label` names it.
  void step(const std::string& label);
  // Clears the line (before printing the results, or from the destructor).
  void finish();

 private:
  std::string what_;
  int64_t total_ = 0, done_ = 0;
  bool active_ = false, tty_ = false;
  double start_ = 0, last_draw_ = -1;
};

// CPU time of the machine and of this process, to tell how busy other processes kept the cores.
struct CpuLoadSample {
  bool ok = false;
  double wall_s = 0, busy_s = 0, self_s = 0;  // busy_s: every core's non-idle time (/proc/stat)
};
CpuLoadSample cpu_load_sample();
// The cores other processes kept busy between two samples, on average (0 when unknown).
double others_busy_cores(const CpuLoadSample& a, const CpuLoadSample& b);
// `recops bench`: a one-line warning on stderr when other processes kept more than half a core
// busy between `a` and `b` (`when`: "before the run", "during the run").
void warn_if_cores_busy(const CpuLoadSample& a, const CpuLoadSample& b, const char* when);

// The fields that name a bench or tune record, in the order tune writes them: op, case, dtype,
// backend, device, impl and phase "fwd" (Json: nlohmann::json or nlohmann::ordered_json).
template <class Json>
Json record_key(const std::string& op, const std::string& case_id, const std::string& dtype,
                const std::string& backend, const std::string& device, const std::string& impl) {
  Json j = Json::object();
  j["op"] = op;
  j["case"] = case_id;
  j["dtype"] = dtype;
  j["backend"] = backend;
  j["device"] = device;
  j["impl"] = impl;
  j["phase"] = "fwd";
  return j;
}

}  // namespace recops::cli
