// tools/recops/main.cpp: the `recops` command line (architecture.md §2): list, check, bench, tune,
// record, compare, report.
#include <CLI/CLI.hpp>

#include <iostream>

#include "tools/recops/commands.h"

namespace {

// `--json --quick` must not write a file named "--quick": a FILE argument never starts with '-'.
const CLI::Validator kFileNotAFlag(
    [](const std::string& v) {
      return !v.empty() && v[0] == '-' ? "a file name, not an option (got '" + v + "')"
                                       : std::string();
    },
    "FILE", "not an option");

// A number in [lo, hi]; NaN is refused too (CLI::Range compares, and NaN passes both compares).
CLI::Validator finite_range(double lo, double hi) {
  return CLI::Validator(
      [lo, hi](const std::string& v) {
        double x = 0;
        try {
          size_t used = 0;
          x = std::stod(v, &used);
          if (used != v.size()) return "not a number: '" + v + "'";
        } catch (const std::exception&) {
          return "not a number: '" + v + "'";
        }
        if (!(x >= lo && x <= hi))
          return "must be in [" + CLI::detail::to_string(lo) + ", " + CLI::detail::to_string(hi) +
                 "], got " + v;
        return std::string();
      },
      "[" + CLI::detail::to_string(lo) + " - " + CLI::detail::to_string(hi) + "]");
}

// A subcommand that runs ops (check, bench, tune, record) with the options they all take.
CLI::App* add_run_command(CLI::App& app, const std::string& name, const std::string& help,
                          recops::cli::CommonOptions& o) {
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_option("--op", o.ops, "op name or family (folder) to run; repeatable; default: all")
      ->delimiter(',');
  sub->add_option("--backend", o.backends,
                  "cpu or cuda; repeatable; default: cpu, plus cuda when a device is visible")
      ->delimiter(',');
  sub->add_option("--cases-dir", o.cases_dir,
                  "directory holding <op>/cases.yaml (src/ops) or the repository root; default: "
                  "$RECOPS_SOURCE_DIR, then the tree next to the executable, then the source tree "
                  "it was built from");
  sub->add_option("--json", o.json, "also write the results as JSON to FILE")->check(kFileNotAFlag);
  sub->add_flag("--quick", o.quick, "skip cases tagged `large` (the CI tier)");
  sub->add_flag("-q,--quiet", o.quiet,
                "no progress on stderr (else: a rewritten line on a terminal, a line every 5 s "
                "elsewhere)");
  return sub;
}

// --offsets-dtype and --out-dtype: only the rows `which` ("whose case lists", "recorded with")
// that dtype.
void add_variant_filters(CLI::App* sub, recops::cli::RowFilterOptions& f,
                         const std::string& which) {
  sub->add_option("--offsets-dtype", f.offsets_dtypes, "only rows " + which + " this offsets dtype")
      ->delimiter(',');
  sub->add_option("--out-dtype", f.out_dtypes, "only rows " + which + " this out_dtype")
      ->delimiter(',');
}

// --dtype and --shape: only the perf shapes of these dtypes and ids (bench, tune).
template <class Options>
void add_shape_filters(CLI::App* sub, Options& o, const std::string& shape_help) {
  sub->add_option("--dtype", o.dtypes, "only shapes of these dtypes")->delimiter(',');
  sub->add_option("--shape", o.shape_ids, shape_help)->delimiter(',');
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"recops: list, check, benchmark, record and compare the recops operators"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("recops ") + RECOPS_VERSION + " (commit " +
                                        RECOPS_BUILD_COMMIT + ")");
  app.footer("Each subcommand takes --help. Case files: docs/cases.md.");

  bool list_json = false, list_tuning = false;
  auto* list = app.add_subcommand(
      "list", "ops, their implementations per backend, and what this build and machine can run");
  list->add_flag("--json", list_json, "print JSON instead of a table");
  bool list_case_ids = false;
  std::vector<std::string> list_ops_sel;
  std::string list_cases_dir;
  auto* list_cases_flag =
      list->add_flag("--cases", list_case_ids,
                     "the case ids of each op's cases.yaml with their dtypes (for check --case)");
  // Without --cases the listing is every op; an --op there would be silently ignored.
  list->add_option("--op", list_ops_sel, "with --cases: only these ops, folders or families")
      ->delimiter(',')
      ->needs(list_cases_flag);
  list->add_option("--cases-dir", list_cases_dir,
                   "with --cases or --markdown: the directory holding the ops");
  bool list_markdown = false;
  list->add_flag("--markdown", list_markdown,
                 "docs/ops.md: every op by family with its schema, implementations, checked dtypes "
                 "and docstring (`make docs` writes it)");
  list->add_flag("--tuning", list_tuning,
                 "the tunable implementations and what the tuning files hold for this machine's "
                 "devices ($RECOPS_TUNING_FILE, else tuning/ of the source tree)");

  recops::cli::CheckOptions co;
  auto* check = add_run_command(
      app, "check", "accuracy over each op's cases.yaml against the reference (accuracy.md)", co);
  check->add_option(
      "--impl", co.impl,
      "force one implementation id (as `recops list` prints it); ops without it are skipped");
  check
      ->add_option(
          "--dtype", co.dtypes,
          "only rows of these dtypes (fp64 fp32 fp16 bf16 fp8_e4m3 int32 int64 uint8 bool)")
      ->delimiter(',');
  add_variant_filters(check, co, "whose case lists");
  check->add_option("--case", co.case_ids, "only the case(s) with this id")->delimiter(',');
  check
      ->add_option("--repeat", co.repeat, "run each case N times and require bit-identical outputs")
      ->check(CLI::Range(1, 1000));
  check
      ->add_option("--threads", co.threads,
                   "also run each case from N host threads at once (each on its own outputs; on "
                   "CUDA on the default stream unless --streams) and require every result "
                   "bit-identical to the "
                   "single run: the registry, tuning and attribute caches under load")
      ->check(CLI::Range(1, 256));
  check
      ->add_option("--streams", co.streams,
                   "with --threads on CUDA: thread t launches on stream t mod N of N non-blocking "
                   "streams instead of the default stream")
      ->check(CLI::Range(1, 64));
  check
      ->add_option(
          "--stress-seconds", co.stress_seconds,
          "with --threads N: after the rows, N threads call rows picked at random from "
          "those that passed (every selected op at once; on CUDA with --streams, thread t "
          "on stream t mod M) for S seconds, each result bit-identical to the row's single "
          "run; one result row per thread with its call count (issue 21's load test)")
      ->check(finite_range(0.0, 86400.0));
  check->add_flag("--fail-on-ref", co.fail_on_ref,
                  "fail a case that only the reference implementation would run");
  check->add_flag(
      "--no-validate", co.no_validate,
      "leave CUDA offsets validation at the library default ($RECOPS_VALIDATE; off in release "
      "builds): bad-input cases that then run count as passed (for compute-sanitizer runs)");
  check
      ->add_option("--nonfinite", co.nonfinite,
                   "set one element of every floating input (its place a hash of op, case and "
                   "input) to nan, inf or -inf before the run; the golden sees the same inputs, so "
                   "the outputs' NaN/inf pattern must be the reference's (issue 21's rule)")
      ->check(CLI::IsMember({"nan", "inf", "-inf"}));
  check->add_flag("-v,--verbose", co.verbose, "print each result as it finishes (stderr)");
  check->add_flag("--smoke", co.smoke,
                  "a representative selection: every case but the `large` ones once, in its first "
                  "dtype (and offsets dtype, out_dtype); `make run` runs it");
  check->add_option("--shard", co.shard,
                    "K/N: only shard K of N (rows split by a hash of op, case, dtype and variant; "
                    "the N shards together are the whole selection)");
  bool check_list_cases = false;
  check->add_flag("--list-cases", check_list_cases,
                  "print the case ids of the selected ops (--op) with their dtypes and exit, as "
                  "`recops list --cases`");

  recops::cli::BenchOptions bo;
  auto* bench = add_run_command(
      app, "bench",
      "time each op's perf.yaml shapes; GB/s against this run's copy ceiling; baselines", bo);
  bench->add_option("--impl", bo.impl, "force one implementation id");
  add_shape_filters(bench, bo, "only the shape(s) with this id (e.g. S3)");
  bench->add_flag("--update-baseline", bo.update_baseline,
                  "store this run's times as the baselines of this device in each perf.yaml");
  bench->add_flag("--fail-on-regression", bo.fail_on_regression,
                  "exit 1 when a shape is slower than its reference by more than --threshold");
  bench->add_option("--against", bo.against,
                    "reference times: a JSON file written by `bench --json` (matched by op, shape, "
                    "dtype and backend) or `baseline` (perf.yaml, this device; the default)");
  bench->add_option("--threshold", bo.threshold_pct, "regression threshold in percent (default 5)")
      ->check(finite_range(0.0, 1e6));
  bench
      ->add_option("--max-seconds", bo.max_seconds,
                   "time budget per shape after warm-up (default 2)")
      ->check(finite_range(0.0, 86400.0));
  bench
      ->add_option("--min-reps", bo.min_reps,
                   "timed repeats at least (default 10 on CPU, 20 on CUDA)")
      ->check(CLI::Range(0, 1000000));

  recops::cli::ReportOptions rpo;
  auto* report = app.add_subcommand(
      "report",
      "Markdown + HTML summary and PNG plots of bench results (bench/plot.py, matplotlib; "
      "interpreter: $RECOPS_PYTHON, else .venv/bin/python in the source tree, else "
      "python3)");
  report->add_option("results", rpo.results, "JSON files written by `bench --json` or bench/*.py")
      ->required();
  report->add_option("--out", rpo.out, "directory to write")->required();
  report->add_option("--cases-dir", rpo.cases_dir,
                     "the source tree (its root or src/ops) holding bench/plot.py");

  recops::cli::TuneOptions to;
  auto* tune = add_run_command(
      app, "tune",
      "time every candidate configuration of the tunable implementations on each perf shape "
      "(rejecting inaccurate ones) and write the fastest per device, op, impl, dtype and shape "
      "bucket into the device's tuning file",
      to);
  tune->add_option("--impl", to.impl, "tune only this implementation id");
  tune->add_option("--shapes", to.shapes,
                   "a perf.yaml file to take the shapes from (default: each op's perf.yaml)");
  add_shape_filters(tune, to, "only the shape(s) with this id");
  tune->add_option("--out", to.out,
                   "the tuning file to write or update (default: tuning/<device-slug>.json in the "
                   "source tree, one per device)");
  tune->add_option("--max-seconds", to.max_seconds,
                   "time budget per candidate after warm-up (default 0.3)")
      ->check(finite_range(0.0, 86400.0));
  tune->add_option("--min-reps", to.min_reps,
                   "timed repeats per candidate at least (default 10 on CPU, 20 on CUDA)")
      ->check(CLI::Range(0, 1000000));
  tune->add_option("--min-gain", to.min_gain_pct,
                   "percent a candidate must beat the default by to replace it (default 2)")
      ->check(finite_range(0.0, 100.0));
  tune->add_option("--rounds", to.rounds,
                   "interleaved default/best block pairs timing the confirmation and --check "
                   "(default 8)")
      ->check(CLI::Range(1, 1000));
  tune->add_flag("--check", to.check,
                 "write nothing: time the configuration the tuning files give each shape against "
                 "the default, interleaved; exit 1 when it is slower by more than --threshold "
                 "(--json FILE for the records)");
  tune->add_option("--threshold", to.threshold_pct,
                   "--check: percent the tuned configuration may be slower (default 3)")
      ->check(finite_range(0.0, 1e6));
  tune->add_option("--accuracy", to.accuracy,
                   "where each candidate is checked against the golden: `shape` (the perf shape, "
                   "the default) or `cases` (every quick case of the op's cases.yaml that the "
                   "implementation runs, with the candidate forced; the perf shape is then only "
                   "timed: for shapes whose fp64 golden on the CPU takes minutes)")
      ->check(CLI::IsMember({"shape", "cases"}));

  recops::cli::RecordOptions ro;
  auto* record = add_run_command(
      app, "record",
      "run each case on one backend and write its inputs and outputs (safetensors + "
      "manifest.json) for `compare` on another backend or machine",
      ro);
  record->add_option("--impl", ro.impl, "force one implementation id");
  record->add_option("--dtype", ro.dtypes, "only rows of these dtypes")->delimiter(',');
  record->add_option("--case", ro.case_ids, "only the case(s) with this id")->delimiter(',');
  add_variant_filters(record, ro, "whose case lists");
  record->add_option("--out", ro.out, "directory to write (created)")->required();

  recops::cli::CompareOptions cmo;
  auto* compare = app.add_subcommand(
      "compare",
      "recompute the cases recorded in DIR on another backend (or the fp64 golden) and "
      "judge the recorded outputs with the accuracy standard");
  compare->add_option("dir", cmo.dir, "a directory written by `recops record`")->required();
  compare->add_option("--op", cmo.ops, "op name or family; repeatable; default: all recorded")
      ->delimiter(',');
  compare->add_option("--dtype", cmo.dtypes, "only rows of these dtypes")->delimiter(',');
  compare->add_option("--case", cmo.case_ids, "only the case(s) with this id")->delimiter(',');
  add_variant_filters(compare, cmo, "recorded with");
  compare->add_option("--backend", cmo.backend, "backend to recompute on (default cpu)");
  compare->add_flag("--golden", cmo.golden, "judge against the fp64 golden instead");
  compare->add_option("--impl", cmo.impl, "force one implementation id for the recomputation");
  compare->add_option("--json", cmo.json, "also write the verdicts as JSON to FILE")
      ->check(kFileNotAFlag);
  compare->add_option("--cases-dir", cmo.cases_dir,
                      "directory holding <op>/cases.yaml (as for check)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (list->parsed())
    return recops::cli::run_list(list_json, list_tuning, list_case_ids, list_ops_sel,
                                 list_cases_dir, list_markdown);
  if (tune->parsed()) return recops::cli::run_tune(to);
  if (check->parsed() && check_list_cases)
    return recops::cli::run_list(false, false, true, co.ops, co.cases_dir);
  if (check->parsed()) return recops::cli::run_check(co, argv[0]);
  if (bench->parsed()) return recops::cli::run_bench(bo);
  if (record->parsed()) return recops::cli::run_record(ro);
  if (compare->parsed()) return recops::cli::run_compare(cmo, argv[0]);
  if (report->parsed()) return recops::cli::run_report(rpo);
  return 2;
}
