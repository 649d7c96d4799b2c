// tools/recops/cmd_tune.cpp: `recops tune`: for each perf shape of a tunable op, every candidate
// configuration of the implementation that runs it (the registry's ImplInfo::candidates) is checked
// against the golden with the op's accuracy standard (poisoned outputs) and timed like `bench`
// (timing.h); the fastest passing one is written, per (device, op, impl, dtype, shape bucket), into
// the versioned tuning file of the device, which the ops read at run time (recops/tuning.h).
// With --accuracy cases the candidates are checked on the op's quick check cases instead of the
// perf shape (whose fp64 golden on the CPU can outlast a whole run at recommender scale), each
// case with the candidate forced; the perf shape is then only timed.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "core/cuda/runtime.h"
#include "recops/registry.h"
#include "recops/tuning.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"
#include "tools/recops/judge.h"
#include "tools/recops/timing.h"

namespace recops::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

constexpr int kTuningVersion = 1;  // the "version" of the file format (recops/tuning.h reads it)

// The candidates of implementation `impl` of `op`, from the registry.
std::vector<TuneConfig> candidates_of(const std::string& op, const std::string& impl,
                                      DeviceType backend) {
  for (const auto& info : list_ops())
    if (info.name == op)
      for (const auto& im : info.impls)
        if (im.id == impl && im.backend == backend) return im.candidates;
  return {};
}

// One candidate's outcome on one shape.
struct Trial {
  TuneConfig config;
  std::string rejected;  // "" when it ran and passed the accuracy check
  Timing timing;
};

// One tuned shape.
struct Result {
  std::string op, shape_id, dtype, backend, device, impl, bucket;
  std::string source;  // --check: where the library's configuration came from (tuned or default)
  std::vector<Trial> trials;
  // Default (trials[0]) and best timed interleaved, block after block (time_ab).
  std::optional<double> ab_default_ms, ab_best_ms;
  std::optional<size_t> best, dflt;  // indices into trials
  std::string error;                 // the shape could not be tuned
};

// Buffers of the accuracy runs of one shape, allocated once and reused by every candidate: the
// outputs on the device, a poisoned host template they are reset from, host copies of the results.
struct CheckBuffers {
  std::vector<Tensor> poisoned, dev_out, host_out;
  Tensor ws;
  std::vector<bool> gold_has_poison;  // per output: some golden element holds the poison bits
};

// True when some element of the contiguous host tensor `t` holds exactly `bits`.
bool contains_bits(const Tensor& t, uint64_t bits) {
  const auto es = static_cast<size_t>(dtype_size(t.dtype()));
  const auto* p = static_cast<const unsigned char*>(t.data());
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t v = 0;
    std::memcpy(&v, p + static_cast<size_t>(i) * es, es);
    if (v == bits) return true;
  }
  return false;
}

CheckBuffers make_check_buffers(const Problem& p, Device dev, size_t workspace_bytes,
                                const std::vector<Tensor>& gold) {
  CheckBuffers cb;
  cb.poisoned = alloc_outputs(p, Device::cpu());
  // An output that is an input written in place (Output::mutates) is reset to the input's values
  // before each run instead.
  for (size_t i = 0; i < cb.poisoned.size(); ++i)
    if (p.outputs[i].mutates < 0)
      poison_fill(cb.poisoned[i].data(), cb.poisoned[i].dtype(), cb.poisoned[i].numel(), 0);
  cb.dev_out = alloc_outputs(p, dev);
  if (!dev.is_cpu()) cb.host_out = alloc_outputs(p, Device::cpu());
  if (workspace_bytes)
    cb.ws = Tensor::empty({static_cast<int64_t>(workspace_bytes)}, DType::uint8, dev);
  for (const auto& g : gold)
    cb.gold_has_poison.push_back(contains_bits(g, poison_bits(g.dtype(), 0)));
  return cb;
}

// One run of the candidate in `ctx` into poisoned outputs, judged against the golden with the
// op's standard: "" when it passes, else why not. Under the exact standard, outputs bit-identical
// to a golden holding no poison pass without the element-wise judge (its verdict for them).
// `run_status` (optional) receives the run's status.
std::string check_candidate(const Driver& d, const Problem& p, const std::vector<Input>& dev_in,
                            Device dev, const Context& ctx, CheckBuffers& cb,
                            const std::vector<Tensor>& gold, const std::vector<Tensor>& plain,
                            core::Standard standard, Status* run_status = nullptr) {
  for (size_t i = 0; i < cb.dev_out.size(); ++i) cb.dev_out[i].copy_from(cb.poisoned[i]);
  Context c = ctx;
  c.workspace = cb.ws.defined() ? cb.ws.data() : nullptr;
  c.workspace_bytes = cb.ws.defined() ? static_cast<size_t>(cb.ws.nbytes()) : 0;
  Status s = d.run(p, views(dev_in), views(cb.dev_out), c);
  if (dev.is_cuda())
    if (Status e = core::cuda::synchronize(dev.index); !e.ok() && s.ok()) s = e;
  if (run_status) *run_status = s;
  if (!s.ok()) return "error: " + s.message();
  JudgeOptions jo;
  jo.standard = standard;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    if (dev.is_cuda()) cb.host_out[i].copy_from(cb.dev_out[i]);
    const Tensor& out = dev.is_cuda() ? cb.host_out[i] : cb.dev_out[i];
    if (standard == core::Standard::exact && !cb.gold_has_poison[i] &&
        out.nbytes() == gold[i].nbytes() &&
        (out.nbytes() == 0 ||
         std::memcmp(out.data(), gold[i].data(), static_cast<size_t>(out.nbytes())) == 0))
      continue;
    const TensorView pv = i < plain.size() ? plain[i].view() : TensorView{};
    jo.baseline = i < plain.size() ? &pv : nullptr;
    const Judgement j = judge(out.view(), gold[i].view(), jo);
    if (!j.pass) return "inaccurate: " + p.outputs[i].name + ": " + j.detail;
  }
  return "";
}

// --accuracy cases: one quick check case of the tuned op, prepared once per tuned shape (inputs on
// the device, golden, the plain baseline for the double standard, poisoned output buffers).
struct CaseCheck {
  std::string label;  // case id and dtype
  Problem p;
  std::vector<Input> dev_in;
  std::vector<Tensor> gold, plain;
  CheckBuffers cb;
  std::string dflt_rejected;  // the default configuration's verdict: "" when it passed
};

// The quick rows of `rows` (the op folder's cases.yaml) for `op` on backend `bt` that
// implementation `impl` runs with its default configuration `dflt` (rows it refuses, expected
// errors and rows the shape function refuses are left out).
std::vector<CaseCheck> prepare_case_checks(const std::vector<CaseRow>& rows, const std::string& op,
                                           DeviceType bt, const std::string& impl,
                                           const TuneConfig& dflt, core::Standard standard) {
  const Driver* d = driver_for(op);
  const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  const RowFilter filter{{op}, {}, {}, {}, {}, true};
  std::vector<CaseCheck> out;
  for (const CaseRow& row : rows) {
    if (row.op != op || !row_selected(row, filter) || !backend_selected(row, bt, impl) ||
        row.spec->expect_error)
      continue;
    CaseCheck cc;
    cc.label =
        row.spec->id + " " + std::string(dtype_name(row.dtype.value_or(d->default_dtype(op))));
    if (!d->make(row, &cc.p).ok() || !cc.p.shape_error.ok()) continue;
    if (Status s = d->golden(cc.p, &cc.gold); !s.ok()) throw Error(s);
    if (standard == core::Standard::dbl)
      if (Status s = d->baseline(cc.p, &cc.plain); !s.ok()) throw Error(s);
    cc.dev_in = inputs_on(cc.p.inputs, dev);
    cc.cb = make_check_buffers(cc.p, dev, 0, cc.gold);
    if (const size_t wb = d->workspace_bytes(cc.p, views(cc.dev_in), views(cc.cb.dev_out)))
      cc.cb.ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
    Context ctx;
    ctx.impl = impl;
    ctx.tune_config = &dflt;
    Status st;
    cc.dflt_rejected =
        check_candidate(*d, cc.p, cc.dev_in, dev, ctx, cc.cb, cc.gold, cc.plain, standard, &st);
    if (st.code() == StatusCode::not_implemented) continue;  // the implementation refuses it
    out.push_back(std::move(cc));
  }
  return out;
}

// Configuration `cfg` of `impl` on every prepared case: "" when each passes, else the first
// failure with its case. The default configuration `dflt` (the one prepare_case_checks ran) keeps
// the verdict the preparation found, without a second run.
std::string check_on_cases(std::vector<CaseCheck>& cases, DeviceType bt, const std::string& impl,
                           const TuneConfig& cfg, const TuneConfig& dflt, core::Standard standard) {
  const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  Context ctx;
  ctx.impl = impl;
  ctx.tune_config = &cfg;
  for (CaseCheck& cc : cases) {
    const std::string r = cfg == dflt ? cc.dflt_rejected
                                      : check_candidate(*driver_for(cc.p.op), cc.p, cc.dev_in, dev,
                                                        ctx, cc.cb, cc.gold, cc.plain, standard);
    if (!r.empty()) return "case " + cc.label + ": " + r;
  }
  return "";
}

// Medians of two calls timed interleaved: `rounds` pairs of blocks (A then B, then B then A, ...),
// each block as many calls as fit in `block_seconds` (at least 3) after a warm-up call; the result
// is the median of each side's block medians. Clock and thermal drift hit both sides alike.
struct AB {
  Status status;
  double a_ms = 0, b_ms = 0;
};

template <class CallA, class CallB>
AB time_ab(DeviceType bt, int rounds, double block_seconds, CallA&& a, CallB&& b) {
  AB r;
  std::vector<double> am, bm;
  for (int i = 0; i < rounds; ++i) {
    for (int side = 0; side < 2; ++side) {
      const bool first_a = (i % 2 == 0) == (side == 0);
      const Timing t = first_a ? time_calls(bt, 1, 1 << 30, block_seconds, a)
                               : time_calls(bt, 1, 1 << 30, block_seconds, b);
      if (!t.status.ok()) {
        r.status = t.status;
        return r;
      }
      (first_a ? am : bm).push_back(t.median_ms);
    }
  }
  r.a_ms = quantile(am, 0.5);
  r.b_ms = quantile(bm, 0.5);
  return r;
}

// The tuning file `path` as it is (empty document when absent), or an error.
Status read_tuning_file(const std::string& path, json* doc) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    *doc = json::object();
    return Status::Ok();
  }
  std::ifstream f(path);
  try {
    *doc = json::parse(f);
  } catch (const std::exception& e) {
    return Status(StatusCode::invalid_argument, path + ": " + e.what());
  }
  if (!doc->is_object() || doc->value("version", 0) != kTuningVersion)
    return Status(StatusCode::invalid_argument, path + ": not a recops tuning file of version " +
                                                    std::to_string(kTuningVersion) +
                                                    " (move it away or pass another --out)");
  return Status::Ok();
}

}  // namespace

int run_tune(const TuneOptions& o) {
  const auto t_start = Clock::now();
  Selection sel;
  if (!select("tune", o.cases_dir, o.ops, o.backends, &sel, o.impl)) return 2;
  const CaseSchema schema = case_schema();
  const std::string commit = project_commit(sel.dir);
  const std::string date = today();

  // The shapes: --shapes FILE (a perf.yaml), else each selected folder's perf.yaml.
  std::vector<CaseFile> files;
  try {
    if (!o.shapes.empty()) {
      files.push_back(load_case_file(o.shapes, FileKind::perf, schema));
    } else {
      for (const auto& folder : folders_of(sel.ops))
        files.push_back(
            load_case_file(sel.dir + "/" + folder + "/perf.yaml", FileKind::perf, schema));
    }
  } catch (const CaseFileError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
  if (!ids_known("tune", "shape", files, sel, o.shape_ids)) return 2;
  // The accuracy standard of each op: its folder's cases.yaml (kept, with its rows, for
  // --accuracy cases).
  std::map<std::string, core::Standard> standards;
  std::map<std::string, CaseFile> case_files;             // by folder
  std::map<std::string, std::vector<CaseRow>> case_rows;  // by folder
  for (const auto& op : sel.ops) {
    const Driver* d = driver_for(op);
    try {
      if (!case_files.count(d->folder())) {
        case_files.emplace(d->folder(), load_case_file(sel.dir + "/" + d->folder() + "/cases.yaml",
                                                       FileKind::cases, schema));
        if (o.accuracy == "cases") case_rows[d->folder()] = expand(case_files.at(d->folder()));
      }
      standards[op] = case_files.at(d->folder()).standard;
    } catch (const CaseFileError& e) {
      std::cerr << "error: " << e.what() << "\n";
      return 2;
    }
  }

  // The work list: (row, backend) pairs whose op has a tunable implementation on that backend.
  struct Item {
    const CaseRow* row;
    DeviceType backend;
  };
  std::vector<std::vector<CaseRow>> rows;
  for (const auto& f : files) rows.push_back(expand(f));
  std::vector<Item> items;
  int64_t total = 0;
  const RowFilter filter{sel.ops, o.shape_ids, o.dtypes, {}, {}, o.quick};
  for (const auto& file_rows : rows)
    for (const CaseRow& row : file_rows) {
      if (!row_selected(row, filter)) continue;
      for (DeviceType bt : sel.backends) {
        if (!backend_selected(row, bt, "")) continue;
        size_t most = 0;
        for (const auto& id : impl_ids(row.op, bt))
          if (o.impl.empty() || id == o.impl)
            most = std::max(most, candidates_of(row.op, id, bt).size());
        if (most < 2) continue;  // nothing to choose from
        items.push_back({&row, bt});
        total += static_cast<int64_t>(most);
      }
    }
  if (items.empty()) {
    std::cerr << "recops tune: no tunable implementation among the selected ops, shapes and "
                 "backends (`recops list --tuning` shows the tunable ones)\n";
    return 2;
  }

  // One tuning file per device (--out FILE, or the folder --out DIR / tuning/ of the source tree
  // holding <device-slug>.json), read and checked before any timing; this run's results are merged
  // in (same op/impl/dtype/bucket replaced) and the file is rewritten after every shape, so a run
  // cut short keeps what it measured.
  struct Target {
    std::string path;
    json base;  // the file's entries before this run, by key
    std::vector<const Result*> results;
  };
  auto entry_key = [](const json& e) {
    return e.value("op", "") + "|" + e.value("impl", "") + "|" + e.value("dtype", "") + "|" +
           e.value("bucket", "");
  };
  std::map<std::string, Target> targets;  // by device name
  {
    std::error_code ec;
    const bool out_is_dir = o.out.empty() || o.out.back() == '/' || fs::is_directory(o.out, ec);
    const fs::path dir_out =
        o.out.empty() ? fs::path(sel.dir).parent_path().parent_path() / "tuning" : fs::path(o.out);
    for (const Item& it : items) {
      const std::string device = device_name(it.backend);
      if (targets.count(device)) continue;
      Target tg;
      tg.path = out_is_dir ? (dir_out / (device_slug(device) + ".json")).string() : o.out;
      for (const auto& [other, t] : targets)
        if (t.path == tg.path) {
          std::cerr << "recops tune: --out names one file but this run tunes two devices (" << other
                    << ", " << device << "); pass one --backend or a directory\n";
          return 2;
        }
      json doc;
      if (Status s = read_tuning_file(tg.path, &doc); !s.ok()) {
        std::cerr << "recops tune: " << s.message() << "\n";
        return 2;
      }
      if (doc.contains("device") && doc["device"] != device) {
        std::cerr << "recops tune: " << tg.path << " holds device '"
                  << doc["device"].get<std::string>() << "', not '" << device << "'\n";
        return 2;
      }
      tg.base = json::object();
      if (doc.contains("entries") && doc["entries"].is_array())
        for (const auto& e : doc["entries"]) tg.base[entry_key(e)] = e;
      targets[device] = std::move(tg);
    }
  }
  int write_errors = 0;
  auto flush = [&](Target& tg, const std::string& device) {
    json entries = tg.base;
    for (const Result* r : tg.results) {
      const Trial& b = r->trials[*r->best];
      const Trial& df = r->trials[*r->dflt];
      json cfg = json::object(), dcfg = json::object();
      for (const auto& [k, v] : b.config.values) cfg[k] = v;
      for (const auto& [k, v] : df.config.values) dcfg[k] = v;
      int rejected = 0;
      for (const auto& tr : r->trials) rejected += !tr.rejected.empty();
      json e = {{"op", r->op},
                {"impl", r->impl},
                {"dtype", r->dtype},
                {"bucket", r->bucket},
                {"config", cfg},
                {"shape", r->shape_id},
                {"default_config", dcfg},
                {"default_ms", df.timing.median_ms},
                {"best_ms", b.timing.median_ms},
                {"speedup", df.timing.median_ms / b.timing.median_ms},
                {"interleaved_default_ms", r->ab_default_ms ? json(*r->ab_default_ms) : json()},
                {"interleaved_best_ms", r->ab_best_ms ? json(*r->ab_best_ms) : json()},
                {"candidates", r->trials.size()},
                {"rejected", rejected},
                {"commit", commit},
                {"date", date}};
      entries[entry_key(e)] = e;
    }
    json out = {{"schema", "recops-tuning"},
                {"version", kTuningVersion},
                {"device", device},
                {"backend", tg.results.front()->backend},
                {"commit", commit},
                {"date", date},
                {"min_gain_pct", o.min_gain_pct},
                {"entries", json::array()}};
    for (auto& [k, e] : entries.items()) out["entries"].push_back(e);
    std::error_code ec;
    if (fs::path(tg.path).has_parent_path())
      fs::create_directories(fs::path(tg.path).parent_path(), ec);
    return replace_file(tg.path, out.dump(2) + "\n").ok();
  };

  Progress progress("tune", total, o.quiet);
  std::vector<Result> results;
  results.reserve(items.size());
  int errors = 0;
  for (const Item& it : items) {
    const CaseRow& row = *it.row;
    const DeviceType bt = it.backend;
    const Driver* d = driver_for(row.op);
    const DType dtype = row.dtype.value_or(d->default_dtype(row.op));
    Result res;
    res.op = row.op;
    res.shape_id = row.spec->id;
    res.dtype = std::string(dtype_name(dtype));
    res.backend = backend_name(bt);
    res.device = device_name(bt);
    try {
      Problem p;
      if (Status s = d->make(row, &p); !s.ok()) throw Error(s);
      if (!p.shape_error.ok()) throw Error(p.shape_error);
      const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
      const std::vector<Input> dev_in = inputs_on(p.inputs, dev);

      // Which implementation runs, its bucket and default: one plain run.
      Context probe;
      probe.impl = o.impl;
      TuneUsed used;
      probe.tune_used = &used;
      RunOut first = run_poisoned(*d, p, dev_in, dev, probe, 0);
      if (!first.status.ok()) throw Error(first.status);
      if (used.impl.empty())
        throw std::runtime_error("implementation " + first.impl_used + " is not tunable");
      res.impl = used.impl;
      res.bucket = used.bucket;
      const std::vector<TuneConfig> cands = candidates_of(row.op, res.impl, bt);
      const core::Standard standard = standards.at(row.op);
      const bool on_cases = o.accuracy == "cases";
      std::vector<Tensor> gold, plain;
      std::vector<CaseCheck> case_checks;
      if (on_cases) {
        case_checks = prepare_case_checks(case_rows.at(d->folder()), row.op, bt, res.impl, cands[0],
                                          standard);
        if (case_checks.empty())
          throw std::runtime_error("--accuracy cases: no quick case of " + row.op +
                                   " in its cases.yaml runs on " + res.impl);
        if (!o.quiet)
          std::cerr << "[tune] " << row.op << " " << row.spec->id << " " << res.dtype
                    << ": candidates checked on " << case_checks.size() << " quick case(s) of "
                    << res.impl << "\n";
      } else {
        if (Status s = d->golden(p, &gold); !s.ok()) throw Error(s);
        if (standard == core::Standard::dbl)
          if (Status s = d->baseline(p, &plain); !s.ok()) throw Error(s);
      }

      // Rotated sets of inputs and outputs, as bench does.
      struct Set {
        std::vector<Input> in;
        std::vector<Tensor> out;
        Tensor ws;
      };
      const double set_bytes = cli::set_bytes(p);
      const int copies =
          set_bytes < 50e6
              ? static_cast<int>(std::clamp(std::ceil(100e6 / std::max(set_bytes, 1.0)), 2.0, 16.0))
              : 1;
      std::vector<Set> sets(static_cast<size_t>(copies));
      for (auto& s : sets) {
        s.in = copies == 1 ? dev_in : inputs_on(p.inputs, dev);
        s.out = alloc_outputs(p, dev);
        const size_t wb = d->workspace_bytes(p, views(s.in), views(s.out));
        if (wb) s.ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
      }

      CheckBuffers checks =
          on_cases ? CheckBuffers{}
                   : make_check_buffers(
                         p, dev,
                         sets[0].ws.defined() ? static_cast<size_t>(sets[0].ws.nbytes()) : 0, gold);
      // The calls timed for configuration `cfg`, rotating over the sets.
      auto call_with = [&](const TuneConfig* cfg) {
        return [&, cfg](int k) {
          Set& s = sets[static_cast<size_t>(k) % sets.size()];
          Context tc;
          tc.impl = res.impl;
          tc.tune_config = cfg;
          tc.workspace = s.ws.defined() ? s.ws.data() : nullptr;
          tc.workspace_bytes = s.ws.defined() ? static_cast<size_t>(s.ws.nbytes()) : 0;
          return d->run(p, views(s.in), views(s.out), tc);
        };
      };
      // A trial of configuration *cfg, checked against the golden (`rejected` says why it fails):
      // the perf shape's, or with --accuracy cases each quick case's.
      auto checked = [&](const TuneConfig* cfg) {
        Trial tr;
        tr.config = *cfg;
        if (on_cases) {
          tr.rejected = check_on_cases(case_checks, bt, res.impl, *cfg, cands[0], standard);
          return tr;
        }
        Context ctx;
        ctx.impl = res.impl;
        ctx.tune_config = cfg;
        tr.rejected = check_candidate(*d, p, dev_in, dev, ctx, checks, gold, plain, standard);
        return tr;
      };
      const double block_s = bt == DeviceType::cuda ? 0.02 : 0.1;
      if (o.check) {
        // The configuration the library picks for this shape (the tuning files) against the
        // default: both checked for accuracy, then timed interleaved.
        res.source = used.source;
        res.dflt = 0;
        res.best = used.source == "tuned" ? 1 : 0;
        std::vector<TuneConfig> pair = {cands[0], used.config};
        for (size_t c = 0; c < (*res.best == 1 ? 2u : 1u); ++c) {
          const Trial tr = checked(&pair[c]);
          if (!tr.rejected.empty())
            throw std::runtime_error("configuration " + tr.config.str() + " fails: " + tr.rejected);
          res.trials.push_back(tr);
        }
        const AB ab =
            time_ab(bt, o.rounds, block_s, call_with(&pair[0]), call_with(&pair[*res.best]));
        if (!ab.status.ok()) throw Error(ab.status);
        res.ab_default_ms = ab.a_ms;
        res.ab_best_ms = ab.b_ms;
        for (auto& tr : res.trials) tr.timing.median_ms = &tr == &res.trials[0] ? ab.a_ms : ab.b_ms;
        if (progress.active()) progress.step(row.op + " " + row.spec->id + " " + res.dtype);
        results.push_back(std::move(res));
        continue;
      }
      for (size_t c = 0; c < cands.size(); ++c) {
        Trial tr = checked(&cands[c]);
        if (tr.rejected.empty()) {
          tr.timing = time_op(bt, o.min_reps, o.max_seconds, call_with(&cands[c]));
          if (!tr.timing.status.ok()) tr.rejected = "error: " + tr.timing.status.message();
        }
        if (c == 0 && !tr.rejected.empty())
          throw std::runtime_error("the default configuration " + tr.config.str() +
                                   " fails: " + tr.rejected);
        res.trials.push_back(tr);
        const std::string label = row.op + " " + row.spec->id + " " + res.dtype + " " +
                                  res.backend + " " + tr.config.str();
        if (progress.active()) progress.step(label);
        if (!tr.rejected.empty())
          std::cerr << "[tune] " << label << ": rejected, " << tr.rejected << "\n";
      }
      // The default is candidates[0] (the registry's contract); another wins only when faster by
      // more than --min-gain, so that noise does not replace it.
      res.dflt = 0;
      res.best = 0;
      const double dflt_ms = res.trials[0].timing.median_ms;
      for (size_t c = 1; c < res.trials.size(); ++c) {
        const Trial& tr = res.trials[c];
        if (!tr.rejected.empty()) continue;
        if (tr.timing.median_ms < dflt_ms * (1 - o.min_gain_pct / 100) &&
            tr.timing.median_ms < res.trials[*res.best].timing.median_ms)
          res.best = c;
      }
      // The winner is confirmed against the default timed interleaved (the sweep times candidates
      // one after another, so drift can favour one): it stays only when still faster by
      // --min-gain, else the default is kept.
      if (*res.best != 0) {
        const AB ab =
            time_ab(bt, o.rounds, block_s, call_with(&cands[0]), call_with(&cands[*res.best]));
        if (!ab.status.ok()) throw Error(ab.status);
        res.ab_default_ms = ab.a_ms;
        res.ab_best_ms = ab.b_ms;
        if (!(ab.b_ms < ab.a_ms * (1 - o.min_gain_pct / 100))) res.best = 0;
      }
    } catch (const std::exception& e) {
      res.error = e.what();
      ++errors;
    }
    results.push_back(std::move(res));
    if (!o.check && results.back().error.empty()) {
      Target& tg = targets[results.back().device];
      tg.results.push_back(&results.back());  // stable: `results` was reserved
      if (!flush(tg, results.back().device)) {
        std::cerr << "recops tune: cannot write " << tg.path << "\n";
        ++write_errors;
      }
    }
  }
  progress.finish();

  // The table.
  for (const auto& r : results)
    if (!r.error.empty())
      std::cout << "error: " << r.op << " " << r.shape_id << " " << r.dtype << " [" << r.backend
                << "]: " << r.error << "\n";
  auto ab_text = [](const Result& r) {
    return r.ab_default_ms ? fmt_g(*r.ab_default_ms, 4) + " / " + fmt_g(*r.ab_best_ms, 4)
                           : std::string("-");
  };
  if (o.check) {
    // --check: the tuned configuration against the default, interleaved; slower by more than
    // --threshold fails.
    Table t({"op", "shape", "dtype", "backend", "impl", "bucket", "source", "configuration",
             "default ms", "tuned ms", "speedup", "verdict"});
    json arr = json::array();
    int slower = 0;
    for (const auto& r : results) {
      if (!r.error.empty()) continue;
      const double dm = *r.ab_default_ms, tm = *r.ab_best_ms;
      const Trial& b = r.trials[*r.best];
      // A shape the files leave at the default (or tune at it) has nothing to verify.
      const bool same = *r.best == 0 || b.config == r.trials[0].config;
      const bool ok = same || tm <= dm * (1 + o.threshold_pct / 100);
      slower += !ok;
      t.add({r.op, r.shape_id, r.dtype, r.backend, r.impl, r.bucket, r.source, b.config.str(),
             fmt_g(dm, 4), fmt_g(tm, 4), fmt_g(dm / tm, 3) + "x",
             same ? "default"
             : ok ? "OK"
                  : "SLOWER"});
      json dcfg = json::object(), cfg = json::object();
      for (const auto& [k, v] : r.trials[0].config.values) dcfg[k] = v;
      for (const auto& [k, v] : b.config.values) cfg[k] = v;
      json rec = record_key<json>(r.op, r.shape_id, r.dtype, r.backend, r.device, r.impl);
      rec.update(json{{"bucket", r.bucket},
                      {"config_source", r.source},
                      {"config", cfg},
                      {"default_config", dcfg},
                      {"time_ms", tm},
                      {"default_time_ms", dm},
                      {"speedup_vs_default", dm / tm},
                      {"method", "interleaved blocks (recops tune --check), " +
                                     std::to_string(o.rounds) + " rounds"},
                      {"same_as_default", same},
                      {"at_least_as_fast", ok},
                      {"threshold_pct", o.threshold_pct},
                      {"commit", commit},
                      {"date", date}});
      arr.push_back(std::move(rec));
    }
    std::cout << t.str();
    if (!o.json.empty()) {
      std::ofstream f(o.json);
      f << arr.dump(2) << "\n";
      if (!f) {
        std::cerr << "recops tune: cannot write " << o.json << "\n";
        return 2;
      }
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t_start).count();
    std::cout << results.size() << " shape(s), " << slower
              << " tuned slower than the default by more than " << fmt_g(o.threshold_pct, 3)
              << "%, " << errors << " error(s) (" << fmt_g(secs, 3) << " s; commit " << commit
              << ")\n";
    return errors || slower ? 1 : 0;
  }
  Table t({"op", "shape", "dtype", "backend", "impl", "bucket", "default ms", "best ms", "speedup",
           "best config", "interleaved default / best ms", "tried", "rejected"});
  for (const auto& r : results) {
    if (!r.error.empty()) {
      t.add({r.op, r.shape_id, r.dtype, r.backend, r.impl, r.bucket, "ERROR", "", "", "", "", "",
             ""});
      continue;
    }
    const Trial& b = r.trials[*r.best];
    const Trial& df = r.trials[*r.dflt];
    int rejected = 0;
    for (const auto& tr : r.trials) rejected += !tr.rejected.empty();
    t.add({r.op, r.shape_id, r.dtype, r.backend, r.impl, r.bucket, fmt_g(df.timing.median_ms, 4),
           fmt_g(b.timing.median_ms, 4), fmt_g(df.timing.median_ms / b.timing.median_ms, 3) + "x",
           *r.best == 0 ? "(default)" : b.config.str(), ab_text(r), std::to_string(r.trials.size()),
           std::to_string(rejected)});
  }
  std::cout << t.str();

  for (const auto& [device, tg] : targets)
    if (!tg.results.empty())
      std::cout << "wrote " << tg.path << " (" << tg.results.size() << " shape(s) tuned on "
                << device << ")\n";
  const double secs = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::cout << results.size() << " shape(s), " << errors << " error(s) (" << fmt_g(secs, 3)
            << " s; commit " << commit << ")\n";
  if (write_errors) return 2;
  return errors ? 1 : 0;
}

}  // namespace recops::cli
