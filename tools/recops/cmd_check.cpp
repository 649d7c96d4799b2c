// tools/recops/cmd_check.cpp: `recops check`: every case of each selected op's cases.yaml, run
// through the public entry on each backend and judged against the golden (accuracy.md).
//
// Per case and backend: generate the inputs on the host (docs/cases.md), copy them to the device,
// poison the outputs, run the op, compare with the golden (the reference implementation on CPU
// copies, computed once per case), then rerun --repeat times and require the same bits. Every
// failure prints one command that reruns only that case.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "core/cuda/runtime.h"
#include "recops/context.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"
#include "tools/recops/gen.h"
#include "tools/recops/judge.h"

namespace recops::cli {
namespace {

struct Result {
  std::string op, case_id, dtype, variant, backend, impl;
  std::string verdict;  // PASS or FAIL
  std::string detail;
  std::optional<double> max_abs, rel_l2;
  double seconds = 0;  // wall time of the row on this backend (its golden included, when made here)
  std::string reproducer;
  std::vector<std::pair<std::string, int64_t>> sizes;
};

// The --streams streams of CUDA device `dev` (created on first use, kept for the run); empty
// on the CPU or without --streams. Throws when a stream cannot be created.
const std::vector<void*>& load_streams(DeviceType bt, Device dev, int n) {
  struct Pool {
    std::map<int, std::vector<void*>> by_device;
    ~Pool() {
      for (auto& [i, v] : by_device)
        for (void* s : v) core::cuda::destroy_stream(s);
    }
  };
  static Pool pool;
  static const std::vector<void*> none;
  if (bt != DeviceType::cuda || n <= 0) return none;
  std::vector<void*>& v = pool.by_device[dev.index];
  while (static_cast<int>(v.size()) < n) {
    void* s = nullptr;
    if (Status st = core::cuda::create_stream(dev.index, &s); !st.ok())
      throw std::runtime_error("--streams: " + st.message());
    v.push_back(s);
  }
  return v;
}

// --nonfinite: element h(op, case, dtype, input) mod numel of every floating input (fp8 has no
// inf, so fp8 inputs are left alone) gets `value`. Inputs are host tensors here; a view may be
// strided, so the element is addressed through its strides.
void inject_nonfinite(Problem* p, const std::string& row_key, double value, std::string* where) {
  for (Input& in : p->inputs) {
    const TensorView& v = in.view;
    if (!is_floating(v.dtype) || v.dtype == DType::fp8_e4m3 || v.numel() == 0) continue;
    uint64_t h = 1469598103934665603ull;  // FNV-1a
    for (char c : row_key + "/" + in.name)
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    const int64_t want = static_cast<int64_t>(h % static_cast<uint64_t>(v.numel()));
    for_each_element_in(v, want, want + 1, [&](int64_t, int64_t off) {
      store_value(static_cast<char*>(v.data) + off * v.itemsize(), v.dtype, value);
      *where += (where->empty() ? "" : ", ") + in.name + "[" + std::to_string(want) + "]";
    });
  }
}

std::string first_line(const std::string& s) {
  const auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
}

// --stress-seconds: a row that passed, with its inputs on the device and its single-run outputs.
struct Kept {
  const Driver* d;
  Problem p;
  std::vector<Input> dev_in;
  std::vector<Tensor> single;
  Device dev;
  std::string label;  // op case dtype variant backend
};
// The rows kept for the stress phase hold at most this many bytes of inputs and outputs (the
// rest still ran in the rows).
constexpr double kStressBytes = 2.0 * (1 << 30);

// Issue 21's load test: o.threads threads call rows of `kept` picked at random (each thread its
// own sequence) for o.stress_seconds, every op of the selection at once; on CUDA with --streams
// thread t launches on stream t mod M. Each result must be bit-identical to the row's single run.
// One result row per thread ("stress", "thread_<t>"): its calls, and its first mismatch.
void run_stress(const CheckOptions& o, const std::vector<Kept>& kept,
                std::vector<Result>* results) {
  const int n = o.threads;
  struct PerThread {
    int64_t calls = 0, failed = 0;
    std::string first_failure;
    std::set<std::string> ops;
  };
  std::vector<PerThread> per(static_cast<size_t>(n));
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(o.stress_seconds));
  // The CUDA streams once, before the threads (the pool is not safe to grow from several
  // threads); check runs on CUDA device 0.
  bool any_cuda = false;
  for (const Kept& k : kept) any_cuda = any_cuda || k.dev.type == DeviceType::cuda;
  const std::vector<void*> streams =
      any_cuda ? load_streams(DeviceType::cuda, Device::cuda(0), o.streams) : std::vector<void*>{};
  std::vector<std::thread> pool;
  for (int t = 0; t < n && !kept.empty(); ++t)
    pool.emplace_back([&, t] {
      PerThread& me = per[static_cast<size_t>(t)];
      uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(t + 1);  // splitmix64 state
      auto next = [&x] {
        uint64_t z = (x += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
      };
      while (std::chrono::steady_clock::now() < deadline) {
        const Kept& k = kept[static_cast<size_t>(next() % kept.size())];
        std::string bad;
        try {
          Context tc;
          tc.impl = o.impl;
          tc.fail_on_reference = o.fail_on_ref;
          if (k.dev.type == DeviceType::cuda && !streams.empty())
            tc.stream = streams[static_cast<size_t>(t) % streams.size()];
          RunOut again =
              run_poisoned(*k.d, k.p, k.dev_in, k.dev, tc, static_cast<int>(me.calls % 2));
          if (!again.status.ok()) bad = "failed: " + again.status.message();
          for (size_t i = 0; bad.empty() && i < k.p.outputs.size(); ++i) {
            int64_t at = -1;
            if (!bit_identical(again.host_out[i].view(), k.single[i].view(), &at))
              bad = "differs from the single run in " + k.p.outputs[i].name + " at element " +
                    std::to_string(at);
          }
        } catch (const std::exception& e) {
          bad = std::string("exception: ") + e.what();
        }
        ++me.calls;
        me.ops.insert(k.p.op);
        if (!bad.empty() && me.failed++ == 0) me.first_failure = k.label + ": " + bad;
      }
    });
  for (auto& th : pool) th.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::set<std::string> ops;
  for (const Kept& k : kept) ops.insert(k.p.op);
  for (int t = 0; t < n; ++t) {
    const PerThread& me = per[static_cast<size_t>(t)];
    Result r;
    r.op = "stress";
    r.case_id = "thread_" + std::to_string(t);
    r.dtype = "-";
    r.backend = kept.empty() ? "-" : backend_name(kept.front().dev.type);
    r.impl = o.impl.empty() ? "-" : o.impl;
    r.seconds = secs;
    r.verdict = me.failed == 0 && !kept.empty() ? "PASS" : "FAIL";
    r.detail = std::to_string(me.calls) + " calls of " + std::to_string(me.ops.size()) + " ops (" +
               std::to_string(kept.size()) + " rows of " + std::to_string(ops.size()) +
               " ops kept) in " + fmt_g(secs, 3) + " s, " + std::to_string(me.failed) +
               " not bit-identical to the single run" +
               (me.failed ? "; first: " + me.first_failure : "") +
               (kept.empty() ? "; no row passed to stress" : "");
    if (r.verdict != "PASS")
      r.reproducer = "recops check --threads " + std::to_string(n) + " --stress-seconds " +
                     fmt_g(o.stress_seconds, 3) + " (same selection)";
    std::cerr << "stress " << r.case_id << ": " << r.detail << "\n";
    results->push_back(r);
  }
}

}  // namespace

int run_check(const CheckOptions& o, const std::string& argv0) {
  const auto t0 = std::chrono::steady_clock::now();
  Selection sel;
  if (!select("check", o.cases_dir, o.ops, o.backends, &sel, o.impl)) return 2;
  if (!check_dtype_names("check", o)) return 2;
  // Data-dependent checks on CUDA tensors are part of what check verifies, unless --no-validate
  // asks for the unvalidated path (invalid offsets must then only stay within bounds).
  if (!o.no_validate) set_validate(true);
  const bool cuda_validates = validate_enabled();

  const CaseSchema schema = case_schema();
  std::vector<Result> results;
  int file_errors = 0;
  std::vector<std::string> seen_case_ids;

  std::vector<CaseFile> files =
      load_case_files(sel, "cases.yaml", FileKind::cases, schema, &file_errors);
  // The filters: a row runs when it passes them, on each backend its case allows.
  RowFilter filter{sel.ops, o.case_ids, o.dtypes, o.offsets_dtypes, o.out_dtypes, o.quick, o.smoke};
  if (!o.shard.empty()) {
    int k = 0, n = 0;
    char end = 0;
    if (std::sscanf(o.shard.c_str(), "%d/%d%c", &k, &n, &end) != 2 || n < 1 || k < 1 || k > n) {
      std::cerr << "recops check: --shard must be K/N with 1 <= K <= N (got '" << o.shard << "')\n";
      return 2;
    }
    filter.shard = k - 1;
    filter.shards = n;
  }
  if (o.stress_seconds > 0 && o.threads < 2) {
    std::cerr << "recops check: --stress-seconds needs --threads N with N >= 2\n";
    return 2;
  }
  std::vector<Kept> kept;
  double kept_bytes = 0;
  const int64_t total = count_runs(files, filter, sel.backends, o.impl);
  Progress progress("check", total, o.quiet || o.verbose);

  for (const CaseFile& file : files) {
    for (const CaseRow& row : expand(file)) {
      if (!selected(sel.ops, row.op)) continue;
      const CaseSpec& cs = *row.spec;
      seen_case_ids.push_back(cs.id);
      if (!row_selected(row, filter)) continue;
      const Driver* d = driver_for(row.op);
      const DType dtype = row.dtype.value_or(d->default_dtype(row.op));

      // The golden is computed once per row, lazily, and shared by the backends.
      std::optional<Problem> problem;
      std::string injected;  // --nonfinite: the input elements set
      Status make_status;
      std::optional<std::vector<Tensor>> gold;
      Status gold_status;

      for (DeviceType bt : sel.backends) {
        if (!backend_selected(row, bt, o.impl)) continue;
        const std::string bname = backend_name(bt);
        Result r;
        const auto row_start = std::chrono::steady_clock::now();
        r.op = row.op;
        r.case_id = cs.id;
        r.dtype = std::string(dtype_name(dtype));
        if (!cs.offsets_dtypes.empty())
          r.variant += "off=" + std::string(dtype_name(row.offsets_dtype));
        if (row.out_dtype)
          r.variant += std::string(r.variant.empty() ? "" : " ") +
                       "out=" + std::string(dtype_name(*row.out_dtype));
        r.backend = bname;
        auto finish = [&](bool pass, const std::string& detail) {
          r.verdict = pass ? "PASS" : "FAIL";
          r.detail = detail;
          r.seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - row_start).count();
          if (!pass) {
            std::string cmd = shell_word(argv0) + " check --op " + row.op + " --case " + cs.id +
                              " --dtype " + r.dtype;
            if (!cs.offsets_dtypes.empty())
              cmd += " --offsets-dtype " + std::string(dtype_name(row.offsets_dtype));
            if (row.out_dtype) cmd += " --out-dtype " + std::string(dtype_name(*row.out_dtype));
            cmd += " --backend " + bname;
            const std::string impl = !o.impl.empty() ? o.impl : r.impl;
            if (!impl.empty() && impl != "-") cmd += " --impl " + impl;
            if (!o.cases_dir.empty()) cmd += " --cases-dir " + shell_word(o.cases_dir);
            if (o.fail_on_ref) cmd += " --fail-on-ref";
            if (o.no_validate) cmd += " --no-validate";
            if (!o.nonfinite.empty()) cmd += " --nonfinite " + o.nonfinite;
            if (o.repeat > 1) cmd += " --repeat " + std::to_string(o.repeat);
            if (o.threads > 1) cmd += " --threads " + std::to_string(o.threads);
            if (o.threads > 1 && o.streams > 0) cmd += " --streams " + std::to_string(o.streams);
            r.reproducer = cmd;
          }
          // Off a terminal a failure is said when it happens, so a run cut short by a time
          // limit still shows it (the table comes only at the end).
          if (o.verbose || (!pass && isatty(2) == 0))
            std::cerr << r.verdict << " " << r.op << " " << r.case_id << " " << r.dtype << " "
                      << r.variant << " " << r.backend << " " << r.impl << " " << first_line(detail)
                      << "\n";
          results.push_back(r);
          progress.step(r.op + " " + r.case_id + " " + r.dtype + " " + r.backend);
        };
        try {
          if (!problem) {
            problem.emplace();
            make_status = d->make(row, &*problem);
            if (make_status.ok() && !o.nonfinite.empty() && !cs.expect_error)
              inject_nonfinite(&*problem, row.op + "/" + cs.id + "/" + r.dtype,
                               o.nonfinite == "nan"   ? std::nan("")
                               : o.nonfinite == "inf" ? HUGE_VAL
                                                      : -HUGE_VAL,
                               &injected);
          }
          if (!make_status.ok()) {
            r.impl = "-";
            finish(false, "bad case: " + make_status.message());
            continue;
          }
          const Problem& p = *problem;
          r.sizes = p.sizes;
          Context base;
          base.impl = o.impl;
          base.fail_on_reference = o.fail_on_ref;
          const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();

          RunOut first;
          std::vector<Input> dev_in;
          if (!p.shape_error.ok()) {
            first.status = p.shape_error;  // the shape function refused: the op's answer
          } else {
            dev_in = dev.is_cpu() ? p.inputs : inputs_on(p.inputs, dev);
            first = run_poisoned(*d, p, dev_in, dev, base, 0);
          }
          r.impl = first.impl_used.empty() ? "-" : first.impl_used;

          if (cs.expect_error) {
            if (first.status.ok() && bt == DeviceType::cuda && !cuda_validates) {
              finish(true, "ran without validation (outputs unspecified; --no-validate)");
            } else if (first.status.ok()) {
              finish(false, "expected an error containing \"" + *cs.expect_error +
                                "\", but the op succeeded");
            } else if (first.status.message().find(*cs.expect_error) == std::string::npos) {
              finish(false, "expected an error containing \"" + *cs.expect_error +
                                "\", got: " + first.status.message());
            } else {
              finish(true, "error as expected: " + first_line(first.status.message()));
            }
            continue;
          }
          if (!first.status.ok()) {
            finish(false, std::string(status_code_name(first.status.code())) + ": " +
                              first.status.message());
            continue;
          }
          if (!gold) {
            gold.emplace();
            gold_status = d->golden(p, &*gold);
          }
          if (!gold_status.ok()) {
            finish(false, "the golden (reference) failed: " + gold_status.message());
            continue;
          }
          JudgeOptions jo;
          jo.standard = file.standard;
          jo.nonfinite = file.nonfinite_of(row.op, bname);
          // The double standard judges against the plain same-precision baseline too.
          std::vector<Tensor> plain;
          if (file.standard == core::Standard::dbl) {
            if (Status s = d->baseline(p, &plain); !s.ok()) {
              finish(false, "the plain baseline failed: " + s.message());
              continue;
            }
          }
          std::vector<TensorView> plain_views;
          for (const Tensor& t : plain) plain_views.push_back(t.view());
          auto baseline_of = [&](size_t i) {
            return i < plain_views.size() ? &plain_views[i] : nullptr;
          };
          bool pass = true;
          std::string detail;
          double max_abs = 0, rel_l2 = 0;
          bool need_second = false;
          const std::optional<Judgement> own = d->judge_outputs(p, first.host_out, *gold);
          if (own) {
            pass = own->pass;
            detail = own->detail;
            max_abs = own->max_abs;
          }
          for (size_t i = 0; !own && i < p.outputs.size(); ++i) {
            jo.baseline = baseline_of(i);
            const Judgement j = judge(first.host_out[i].view(), (*gold)[i].view(), jo);
            max_abs = std::max(max_abs, j.max_abs);
            rel_l2 = std::max(rel_l2, j.rel_l2);
            need_second = need_second || j.ambiguous > 0;
            if (!j.pass) {
              pass = false;
              if (detail.empty()) {
                detail = p.outputs[i].name + ": " + j.detail + " (" + std::to_string(j.mismatched) +
                         " mismatched, " + std::to_string(j.unwritten) + " unwritten, " +
                         std::to_string(j.nonfinite) + " non-finite)";
                if (j.nonfinite)
                  detail += " [non-finite: " + std::to_string(j.nf_missing) + " made finite, " +
                            std::to_string(j.nf_extra) + " where the golden is finite, " +
                            std::to_string(j.nf_class) + " of another kind; rule " +
                            std::string(core::nonfinite_rule_name(jo.nonfinite)) + "]";
                if (!injected.empty()) detail += " (--nonfinite at " + injected + ")";
              }
            }
          }
          // Elements whose golden equals the first poison: rerun with the second.
          if (pass && need_second) {
            RunOut second = run_poisoned(*d, p, dev_in, dev, base, 1);
            jo.poison_variant = 1;
            for (size_t i = 0; i < p.outputs.size() && pass; ++i) {
              jo.baseline = baseline_of(i);
              const Judgement j = judge(second.host_out[i].view(), (*gold)[i].view(), jo);
              if (!j.pass) {
                pass = false;
                detail = p.outputs[i].name + " (second poison): " + j.detail;
              }
            }
          }
          r.max_abs = max_abs;
          r.rel_l2 = rel_l2;
          // Determinism: the same bits on every rerun.
          if (pass && cs.deterministic) {
            for (int k = 1; k < o.repeat && pass; ++k) {
              RunOut again = run_poisoned(*d, p, dev_in, dev, base, k % 2);
              if (!again.status.ok()) {
                pass = false;
                detail = "run " + std::to_string(k + 1) + " failed: " + again.status.message();
                break;
              }
              for (size_t i = 0; i < p.outputs.size(); ++i) {
                int64_t at = -1;
                if (!bit_identical(again.host_out[i].view(), first.host_out[i].view(), &at)) {
                  pass = false;
                  detail = "run " + std::to_string(k + 1) + " differs from run 1 in " +
                           p.outputs[i].name + " at element " + std::to_string(at);
                  break;
                }
              }
            }
          }
          // Load: N host threads run the case at once; each must give the single run's bits.
          // On CUDA with --streams, thread t launches on stream t mod N.
          if (pass && o.threads > 1) {
            std::vector<RunOut> runs(static_cast<size_t>(o.threads));
            const std::vector<void*>& streams = load_streams(bt, dev, o.streams);
            std::vector<std::thread> pool;
            for (int t = 0; t < o.threads; ++t)
              pool.emplace_back([&, t] {
                try {
                  Context tc = base;
                  if (!streams.empty())
                    tc.stream = streams[static_cast<size_t>(t) % streams.size()];
                  runs[t] = run_poisoned(*d, p, dev_in, dev, tc, t % 2);
                } catch (const std::exception& e) {
                  runs[t].status = Status(StatusCode::internal, e.what());
                }
              });
            for (auto& th : pool) th.join();
            for (int t = 0; t < o.threads && pass; ++t) {
              if (!runs[t].status.ok()) {
                pass = false;
                detail = "thread " + std::to_string(t) + " of " + std::to_string(o.threads) +
                         " failed: " + runs[t].status.message();
                break;
              }
              for (size_t i = 0; i < p.outputs.size(); ++i) {
                int64_t at = -1;
                if (!bit_identical(runs[t].host_out[i].view(), first.host_out[i].view(), &at)) {
                  pass = false;
                  detail = "thread " + std::to_string(t) + " of " + std::to_string(o.threads) +
                           " differs from the single run in " + p.outputs[i].name + " at element " +
                           std::to_string(at);
                  break;
                }
              }
            }
          }
          if (pass && cs.deterministic && o.stress_seconds > 0 &&
              kept_bytes + 2 * set_bytes(p) <= kStressBytes) {
            kept_bytes += 2 * set_bytes(p);
            kept.push_back({d, p, dev_in, first.host_out, dev,
                            r.op + " " + r.case_id + " " + r.dtype +
                                (r.variant.empty() ? "" : " " + r.variant) + " " + bname});
          }
          finish(pass, detail);
        } catch (const std::exception& e) {
          if (r.impl.empty()) r.impl = "-";
          finish(false, std::string("exception: ") + e.what());
        }
      }
    }
  }
  if (o.stress_seconds > 0) run_stress(o, kept, &results);
  for (const auto& id : o.case_ids)
    if (std::find(seen_case_ids.begin(), seen_case_ids.end(), id) == seen_case_ids.end()) {
      std::cerr << "recops check: no case '" << id << "' among the selected ops\n";
      return 2;
    }

  progress.finish();
  Table t({"op", "case", "dtype", "backend", "impl", "max abs", "rel L2", "verdict"});
  int failed = 0;
  for (const auto& r : results) {
    failed += r.verdict != "PASS";
    t.add(
        {r.op, r.case_id, r.variant.empty() ? r.dtype : r.dtype + " " + r.variant, r.backend,
         r.impl, r.max_abs ? fmt_g(*r.max_abs) : "-", r.rel_l2 ? fmt_g(*r.rel_l2) : "-",
         r.verdict == "PASS" ? (r.max_abs || r.op == "stress" ? "PASS" : "PASS (error)") : "FAIL"});
  }
  std::cout << t.str();
  if (failed) {
    std::cout << "\nFailures (" << failed << "); reproduce each with the command below it:\n";
    for (const auto& r : results)
      if (r.verdict != "PASS")
        std::cout << "  " << r.op << " " << r.case_id << " " << r.dtype << " " << r.variant << " ["
                  << r.backend << "]: " << r.detail << "\n    " << r.reproducer << "\n";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "\n"
            << results.size() - static_cast<size_t>(failed) << " passed, " << failed << " failed";
  if (file_errors) std::cout << ", " << file_errors << " case file(s) could not be read";
  std::cout << " (" << fmt_g(secs, 3) << " s)\n";

  if (!o.json.empty()) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json shape = nlohmann::json::object();
      for (const auto& [k, v] : r.sizes) shape[k] = v;
      arr.push_back(
          {{"op", r.op},
           {"case", r.case_id},
           {"dtype", r.dtype},
           {"variant", r.variant},
           {"backend", r.backend},
           {"impl", r.impl},
           {"shape", shape},
           {"max_abs", r.max_abs ? nlohmann::json(*r.max_abs) : nlohmann::json()},
           {"rel_l2", r.rel_l2 ? nlohmann::json(*r.rel_l2) : nlohmann::json()},
           {"verdict", r.verdict},
           {"seconds", r.seconds},
           {"detail", r.detail},
           {"reproducer", r.reproducer.empty() ? nlohmann::json() : nlohmann::json(r.reproducer)}});
    }
    std::ofstream f(o.json);
    f << arr.dump(2) << "\n";
    if (!f) {
      std::cerr << "recops check: cannot write " << o.json << "\n";
      return 2;
    }
  }
  if (results.empty() && !file_errors) {
    std::cerr << "recops check: no cases selected\n";
    return 2;
  }
  return failed || file_errors ? 1 : 0;
}

}  // namespace recops::cli
