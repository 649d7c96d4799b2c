// tools/recops/commands.h: the subcommands, each registered on the CLI11 app by main.cpp.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace recops::cli {

// Options every data-driven subcommand shares.
struct CommonOptions {
  std::vector<std::string> ops;       // --op (names or families)
  std::vector<std::string> backends;  // --backend
  std::string cases_dir;              // --cases-dir
  std::string json;                   // --json FILE
  bool quick = false;                 // --quick: skip cases tagged `large`
  bool quiet = false;                 // --quiet: no progress (also when stderr is no terminal)
};

// The row filters of check, record and compare (--dtype, --offsets-dtype, --out-dtype, --case).
struct RowFilterOptions {
  std::vector<std::string> dtypes, offsets_dtypes, out_dtypes, case_ids;
};

struct CheckOptions : CommonOptions, RowFilterOptions {
  std::string impl;
  int repeat = 1;
  int threads = 1;  // --threads: also run each case from N host threads at once (the stress rule)
  int streams = 0;  // --streams: on CUDA, the --threads runs launch on N streams (round robin)
  // --stress-seconds: after the rows, the --threads threads call rows picked at random (every
  // selected op mixed) for this long, each result bit-identical to the row's single run.
  double stress_seconds = 0;
  bool fail_on_ref = false;
  bool no_validate = false;
  bool verbose = false;
  bool smoke = false;  // --smoke: each case once (RowFilter::smoke)
  std::string shard;   // --shard K/N (RowFilter::shard)
  // --nonfinite nan|inf|-inf: one element of every floating input set to this value before the
  // run (the golden sees the same inputs): the non-finite pattern must match the reference's.
  std::string nonfinite;
};

struct BenchOptions : CommonOptions {
  std::string impl;
  std::vector<std::string> dtypes, shape_ids;
  bool update_baseline = false;
  bool fail_on_regression = false;
  // --against FILE (a `bench --json` file) or "baseline" (perf.yaml, this device; the default).
  std::string against;
  double threshold_pct = 5.0;  // a shape slower than its reference by more than this regresses
  double max_seconds = 2.0;    // per shape, after warm-up
  int min_reps = 0;            // 0: 10 on CPU, 20 on CUDA
};

// record: each case's inputs and outputs on one backend, as safetensors + manifest.json in `out`.
struct RecordOptions : CommonOptions, RowFilterOptions {
  std::string impl, out;
};

// compare: the recorded cases of `dir`, recomputed on `backend` (default cpu) or the fp64 golden.
struct CompareOptions : RowFilterOptions {
  std::string dir, backend, impl, cases_dir, json;
  std::vector<std::string> ops;
  bool golden = false;
};

// tune: every candidate configuration of the tunable implementations on each perf shape; the
// fastest that passes the accuracy check goes into the device's tuning file.
struct TuneOptions : CommonOptions {
  std::string impl, shapes, out;
  std::vector<std::string> dtypes, shape_ids;
  double max_seconds = 0.3;   // per candidate, after warm-up
  int min_reps = 0;           // 0: 10 on CPU, 20 on CUDA
  double min_gain_pct = 2.0;  // a candidate replaces the default only when this much faster
  int rounds = 8;             // interleaved default/best block pairs (confirmation, --check)
  bool check = false;         // time the configuration the tuning files give against the default
  std::string accuracy = "shape";  // where candidates are judged: the perf shape, or "cases"
  double threshold_pct = 3.0;      // --check: tuned slower than the default by more than this fails
};

// report: plots and a summary of bench results JSON files, drawn by bench/plot.py.
struct ReportOptions {
  std::vector<std::string> results;
  std::string out, cases_dir;
};

int run_list(bool json, bool tuning, bool cases, const std::vector<std::string>& ops,
             const std::string& cases_dir, bool markdown = false);
int run_check(const CheckOptions& o, const std::string& argv0);
int run_bench(const BenchOptions& o);
int run_record(const RecordOptions& o);
int run_compare(const CompareOptions& o, const std::string& argv0);
int run_report(const ReportOptions& o);
int run_tune(const TuneOptions& o);

}  // namespace recops::cli
