// tools/recops/cmd_record.cpp: `recops record` and `recops compare`, the dual-side check
// (architecture.md §2): record runs each case on one backend or machine and writes its inputs and
// outputs as safetensors plus a JSON manifest; compare reloads the recorded inputs, recomputes on
// another backend (or the fp64 golden) and judges the recorded outputs with the accuracy standard.
//
// DIR/manifest.json: {"format", "backend", "device", "commit", "date", "versions", "cases": [...]},
// each case {op, case, dtype, offsets_dtype, out_dtype, seed, standard, impl, device, commit,
// inputs, outputs (file names in DIR), input_names, output_names (the tensors in the op's order;
// a safetensors header keeps none), args}. Inputs are stored in their logical shape
// (contiguous); compare rebuilds the case from cases.yaml (scalars, strides) and overwrites its
// values with them. `args` holds the op's non-tensor arguments (by their names in its argument
// table) whose value the row states under that same name (see scalar_args); an argument it lacks
// is one the case leaves at the schema default, or one the driver derives otherwise (tags).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "core/cuda/runtime.h"
#include "core/kit/op_def.h"
#include "recops/context.h"
#include "tools/recops/commands.h"
#include "tools/recops/common.h"
#include "tools/recops/gen.h"
#include "tools/recops/judge.h"
#include "tools/recops/safetensors.h"

#ifndef RECOPS_VERSION
#define RECOPS_VERSION "unknown"
#endif

namespace recops::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The file stem of a recorded row: op__case__dtype[__off-int32][__out-fp32].
std::string row_stem(const CaseRow& row, DType dtype) {
  std::string s = row.op + "__" + row.spec->id + "__" + std::string(dtype_name(dtype));
  if (!row.spec->offsets_dtypes.empty()) s += "__off-" + std::string(dtype_name(row.offsets_dtype));
  if (row.out_dtype) s += "__out-" + std::string(dtype_name(*row.out_dtype));
  return s;
}

// Runs the op once on `dev` with poisoned outputs; the outputs come back on the host.
Status run_on(const Driver& d, const Problem& p, Device dev, const std::string& impl,
              std::vector<Tensor>* host_out, std::string* impl_used) {
  *host_out = alloc_outputs(p, Device::cpu());
  // An output that is an input written in place (Output::mutates) starts as that input's values.
  for (size_t i = 0; i < host_out->size(); ++i)
    if (p.outputs[i].mutates < 0)
      poison_fill((*host_out)[i].data(), (*host_out)[i].dtype(), (*host_out)[i].numel(), 0);
  const std::vector<Input> dev_in = dev.is_cpu() ? p.inputs : inputs_on(p.inputs, dev);
  std::vector<Tensor> dev_out;
  if (dev.is_cpu()) {
    dev_out = *host_out;  // shares the buffers
  } else {
    for (const auto& t : *host_out) dev_out.push_back(t.to(dev));
  }
  Context ctx;
  ctx.impl = impl;
  ctx.impl_used = impl_used;
  Tensor ws;
  const auto in_v = views(dev_in), out_v = views(dev_out);
  if (const size_t wb = d.workspace_bytes(p, in_v, out_v); wb > 0) {
    ws = Tensor::empty({static_cast<int64_t>(wb)}, DType::uint8, dev);
    ctx.workspace = ws.data();
    ctx.workspace_bytes = wb;
  }
  Status s = d.run(p, in_v, out_v, ctx);
  if (dev.is_cuda()) {
    if (Status e = core::cuda::synchronize(dev.index); !e.ok() && s.ok()) s = e;
    for (size_t i = 0; i < host_out->size(); ++i) (*host_out)[i].copy_from(dev_out[i]);
  }
  return s;
}

json versions() {
  return {{"recops", RECOPS_VERSION},
          {"compiler", __VERSION__},
          {"cuda_build", core::cuda::built_with_cuda()}};
}

// Overwrites the values of a (possibly strided) host view with a contiguous recorded tensor.
void copy_into_view(const TensorView& dst, const Tensor& src) {
  const auto es = static_cast<size_t>(dtype_size(dst.dtype));
  const char* s = static_cast<const char*>(src.data());
  char* o = static_cast<char*>(dst.data);
  for_each_element(dst, [&](int64_t i, int64_t off) {
    std::memcpy(o + off * static_cast<int64_t>(es), s + static_cast<size_t>(i) * es, es);
  });
}

// The values of `row.op`'s non-tensor arguments (kit::OpDef::args) that the row states under the
// argument's own name: the driver's by-name scalars (Problem::scalars), the case's `args:` map,
// its typed fields max_seq_len, padding_value, S and total_L, and the row's out_dtype for an
// argument `out_dtype`. One name per concept: nothing is matched under another name, so an
// argument missing here is one the row gives no value for under its name.
json scalar_args(const CaseRow& row, const Problem& p) {
  json out = json::object();
  const kit::OpDef* def = kit::find_def(row.op);
  if (!def) return out;
  const CaseSpec& cs = *row.spec;
  for (const kit::ArgDef& a : def->args) {
    using T = kit::ArgType;
    if (a.type == T::tensor || a.type == T::opt_tensor) continue;
    std::optional<double> v;
    if (const auto it = p.scalars.find(a.name); it != p.scalars.end()) {
      v = it->second;
    } else if (const auto ca = cs.args.find(a.name); ca != cs.args.end()) {
      const ArgValue& x = ca->second;
      if (x.kind == ArgKind::boolean) v = x.b ? 1.0 : 0.0;
      if (x.kind == ArgKind::integer || x.kind == ArgKind::number) v = x.f;
      if (x.kind == ArgKind::integer) {
        out[a.name] = x.i;  // exact beyond 2^53
        continue;
      }
    } else if (a.name == "max_seq_len" && cs.max_seq_len) {
      out[a.name] = *cs.max_seq_len;
      continue;
    } else if (a.name == "total_L" && cs.total_L) {
      out[a.name] = *cs.total_L;
      continue;
    } else if (a.name == "S" && cs.S) {
      out[a.name] = *cs.S;
      continue;
    } else if (a.name == "padding_value" && cs.padding_value) {
      v = *cs.padding_value;
    } else if (a.name == "out_dtype" && a.type == T::opt_dtype && row.out_dtype) {
      out[a.name] = std::string(dtype_name(*row.out_dtype));
      continue;
    }
    if (!v) continue;
    switch (a.type) {
      case T::boolean: out[a.name] = *v != 0; break;
      case T::int64:
      case T::opt_int64: out[a.name] = static_cast<int64_t>(*v); break;
      case T::opt_dtype:
        out[a.name] = std::string(dtype_name(static_cast<DType>(static_cast<int>(*v))));
        break;
      default:
        // JSON has no NaN or Inf: those travel as strings ("nan", "inf", "-inf").
        if (std::isfinite(*v))
          out[a.name] = *v;
        else
          out[a.name] = std::isnan(*v) ? "nan" : (*v > 0 ? "inf" : "-inf");
    }
  }
  return out;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

}  // namespace

int run_record(const RecordOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  Selection sel;
  if (!select("record", o.cases_dir, o.ops, o.backends, &sel, o.impl)) return 2;
  if (!check_dtype_names("record", o)) return 2;
  if (sel.backends.size() != 1) {
    std::cerr << "recops record: give exactly one --backend\n";
    return 2;
  }
  const DeviceType bt = sel.backends[0];
  const std::string bname = backend_name(bt);
  const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) {
    std::cerr << "recops record: cannot create " << o.out << ": " << ec.message() << "\n";
    return 2;
  }
  const std::string commit = project_commit(sel.dir), date = today(), device = device_name(bt);
  const CaseSchema schema = case_schema();
  json cases = json::array();
  Table t({"op", "case", "dtype", "impl", "files", "status"});
  int errors = 0, skipped = 0;
  // The rows check would run (--offsets-dtype / --out-dtype: rows whose case lists that dtype).
  const RowFilter filter{sel.ops, o.case_ids, o.dtypes, o.offsets_dtypes, o.out_dtypes, o.quick};
  for (const CaseFile& file :
       load_case_files(sel, "cases.yaml", FileKind::cases, schema, &errors)) {
    for (const CaseRow& row : expand(file)) {
      const CaseSpec& cs = *row.spec;
      if (!row_selected(row, filter) || !backend_selected(row, bt, o.impl)) continue;
      const Driver* d = driver_for(row.op);
      const DType dtype = row.dtype.value_or(d->default_dtype(row.op));
      const std::string dname(dtype_name(dtype));
      // A case whose answer is an error has no outputs to record.
      if (cs.expect_error) {
        ++skipped;
        continue;
      }
      Problem p;
      std::string impl_used, status = "recorded";
      std::vector<Tensor> out;
      try {
        if (Status s = d->make(row, &p); !s.ok()) throw Error(s);
        if (!p.shape_error.ok()) {
          ++skipped;
          continue;
        }
        if (Status s = run_on(*d, p, dev, o.impl, &out, &impl_used); !s.ok()) throw Error(s);
        const std::string stem = row_stem(row, dtype);
        const std::map<std::string, std::string> meta = {
            {"op", row.op}, {"case", cs.id}, {"dtype", dname}, {"backend", bname}};
        std::vector<std::pair<std::string, TensorView>> ins, outs;
        json in_names = json::array(), out_names = json::array();
        for (const auto& in : p.inputs) {
          ins.emplace_back(in.name, in.view);
          in_names.push_back(in.name);
        }
        for (size_t i = 0; i < out.size(); ++i) {
          outs.emplace_back(p.outputs[i].name, out[i].view());
          out_names.push_back(p.outputs[i].name);
        }
        const std::string fin = stem + ".inputs.safetensors", fout = stem + ".outputs.safetensors";
        if (Status s = write_safetensors(o.out + "/" + fin, ins, meta); !s.ok()) throw Error(s);
        if (Status s = write_safetensors(o.out + "/" + fout, outs, meta); !s.ok()) throw Error(s);
        cases.push_back(
            {{"op", row.op},
             {"case", cs.id},
             {"dtype", dname},
             {"offsets_dtype", cs.offsets_dtypes.empty()
                                   ? json()
                                   : json(std::string(dtype_name(row.offsets_dtype)))},
             {"out_dtype", row.out_dtype ? json(std::string(dtype_name(*row.out_dtype))) : json()},
             {"seed", cs.seed},
             {"standard", std::string(core::standard_name(file.standard))},
             {"backend", bname},
             {"impl", impl_used.empty() ? "-" : impl_used},
             {"device", device},
             {"commit", commit},
             {"versions", versions()},
             {"inputs", fin},
             {"outputs", fout},
             {"input_names", in_names},
             {"output_names", out_names},
             {"args", scalar_args(row, p)}});
        t.add({row.op, cs.id, dname, impl_used, stem + ".*", status});
      } catch (const std::exception& e) {
        ++errors;
        t.add({row.op, cs.id, dname, impl_used.empty() ? "-" : impl_used, "-",
               std::string("ERROR: ") + e.what()});
      }
    }
  }
  const json manifest = {{"format", "recops-record/1"},
                         {"backend", bname},
                         {"device", device},
                         {"commit", commit},
                         {"date", date},
                         {"versions", versions()},
                         {"cases", cases}};
  {
    std::ofstream f(o.out + "/manifest.json");
    f << manifest.dump(2) << "\n";
    if (!f) {
      std::cerr << "recops record: cannot write " << o.out << "/manifest.json\n";
      return 2;
    }
  }
  std::cout << t.str();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "\n"
            << cases.size() << " recorded in " << o.out << " (" << bname << ", " << device << "), "
            << skipped << " skipped (expected errors), " << errors << " error(s) ("
            << fmt_g(secs, 3) << " s)\n";
  if (cases.empty() && !errors) {
    std::cerr << "recops record: no cases selected\n";
    return 2;
  }
  return errors ? 1 : 0;
}

int run_compare(const CompareOptions& o, const std::string& argv0) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!check_dtype_names("compare", o)) return 2;
  json manifest;
  {
    std::ifstream f(o.dir + "/manifest.json");
    if (!f) {
      std::cerr << "recops compare: cannot read " << o.dir << "/manifest.json\n";
      return 2;
    }
    try {
      manifest = json::parse(f);
    } catch (const std::exception& e) {
      std::cerr << "recops compare: " << o.dir << "/manifest.json: " << e.what() << "\n";
      return 2;
    }
  }
  std::string dir;
  std::vector<std::string> ops;
  try {
    dir = ops_dir(o.cases_dir);
    ops = select_ops(o.ops);
  } catch (const std::exception& e) {
    std::cerr << "recops compare: " << e.what() << "\n";
    return 2;
  }
  if (o.golden && !o.backend.empty()) {
    std::cerr << "recops compare: --backend and --golden exclude each other\n";
    return 2;
  }
  DeviceType bt = DeviceType::cpu;
  if (!o.golden) {
    std::string berr;
    const auto b = select_backends({o.backend.empty() ? "cpu" : o.backend}, &berr);
    if (!berr.empty()) {
      std::cerr << "recops compare: " << berr << "\n";
      return 2;
    }
    bt = b[0];
  }
  const std::string against = o.golden ? "golden" : std::string(backend_name(bt));
  const Device dev = bt == DeviceType::cuda ? Device::cuda(0) : Device::cpu();
  const CaseSchema schema = case_schema();
  std::map<std::string, CaseFile> files;  // by folder

  struct Row {
    std::string op, case_id, dtype, variant, recorded_impl, impl, verdict, detail, reproducer;
    std::optional<double> max_abs, rel_l2;
  };
  std::vector<Row> rows;
  int failed = 0;
  for (const json& e : manifest.value("cases", json::array())) {
    Row r;
    try {
      r.op = e.at("op").get<std::string>();
      r.case_id = e.at("case").get<std::string>();
      r.dtype = e.at("dtype").get<std::string>();
      r.recorded_impl = e.value("impl", "-");
    } catch (const std::exception& ex) {
      std::cerr << "recops compare: malformed manifest entry " << e.dump() << "\n";
      return 2;
    }
    if (!selected(ops, r.op) || !selected(o.case_ids, r.case_id) || !selected(o.dtypes, r.dtype))
      continue;
    // The row's other dtypes, when the case lists them (null in the manifest otherwise).
    const json off_dt = e.value("offsets_dtype", json()), out_dt = e.value("out_dtype", json());
    if (!o.offsets_dtypes.empty() &&
        (!off_dt.is_string() || !selected(o.offsets_dtypes, off_dt.get<std::string>())))
      continue;
    if (!o.out_dtypes.empty() &&
        (!out_dt.is_string() || !selected(o.out_dtypes, out_dt.get<std::string>())))
      continue;
    if (off_dt.is_string()) r.variant = "off=" + off_dt.get<std::string>();
    if (out_dt.is_string())
      r.variant += (r.variant.empty() ? "" : " ") + ("out=" + out_dt.get<std::string>());
    r.impl = "-";
    auto finish = [&](bool pass, const std::string& detail) {
      r.verdict = pass ? "PASS" : "FAIL";
      r.detail = detail;
      if (!pass) {
        ++failed;
        std::string cmd = shell_word(argv0) + " compare " + shell_word(o.dir) + " --op " + r.op +
                          " --case " + r.case_id + " --dtype " + r.dtype;
        if (off_dt.is_string()) cmd += " --offsets-dtype " + off_dt.get<std::string>();
        if (out_dt.is_string()) cmd += " --out-dtype " + out_dt.get<std::string>();
        cmd += o.golden ? " --golden" : " --backend " + against;
        if (!o.impl.empty()) cmd += " --impl " + o.impl;
        if (!o.cases_dir.empty()) cmd += " --cases-dir " + shell_word(o.cases_dir);
        r.reproducer = cmd;
      }
      rows.push_back(r);
    };
    try {
      const Driver* d = driver_for(r.op);
      const std::string folder = d->folder();
      if (!files.count(folder))
        files[folder] = load_case_file(dir + "/" + folder + "/cases.yaml", FileKind::cases, schema);
      const CaseFile& file = files[folder];
      // The row of cases.yaml this entry was recorded from.
      std::optional<CaseRow> found;
      for (const CaseRow& row : expand(file)) {
        const DType dt = row.dtype.value_or(d->default_dtype(row.op));
        const json off = row.spec->offsets_dtypes.empty()
                             ? json()
                             : json(std::string(dtype_name(row.offsets_dtype)));
        const json od = row.out_dtype ? json(std::string(dtype_name(*row.out_dtype))) : json();
        if (row.op == r.op && row.spec->id == r.case_id && dtype_name(dt) == r.dtype &&
            off == off_dt && od == out_dt) {
          found = row;
          break;
        }
      }
      if (!found) {
        finish(false, "no such row in " + file.path + " (the case file changed since recording)");
        continue;
      }
      Problem p;
      if (Status s = d->make(*found, &p); !s.ok()) throw Error(s);
      if (!p.shape_error.ok()) throw Error(p.shape_error);
      SafetensorsFile fin, fout;
      if (Status s = read_safetensors(o.dir + "/" + e.at("inputs").get<std::string>(), &fin);
          !s.ok())
        throw Error(s);
      if (Status s = read_safetensors(o.dir + "/" + e.at("outputs").get<std::string>(), &fout);
          !s.ok())
        throw Error(s);
      // The recorded inputs replace the regenerated values (same shapes and dtypes required).
      std::string mismatch;
      for (const auto& in : p.inputs) {
        const Tensor* t = fin.find(in.name);
        if (!t) {
          mismatch = "input '" + in.name + "' missing from the recording";
        } else if (t->dtype() != in.view.dtype || t->shape() != in.view.shape()) {
          mismatch = "input '" + in.name + "' recorded as " + std::string(dtype_name(t->dtype())) +
                     " " + shape_str(t->shape()) + ", the case has " +
                     std::string(dtype_name(in.view.dtype)) + " " + shape_str(in.view.shape());
        } else {
          copy_into_view(in.view, *t);
          continue;
        }
        break;
      }
      std::vector<const Tensor*> recorded;
      for (const auto& out : p.outputs) {
        const Tensor* t = mismatch.empty() ? fout.find(out.name) : nullptr;
        if (mismatch.empty() && !t) mismatch = "output '" + out.name + "' missing";
        if (t && (t->dtype() != out.dtype || t->shape() != out.shape))
          mismatch = "output '" + out.name + "' recorded as " + shape_str(t->shape()) +
                     ", the case gives " + shape_str(out.shape);
        recorded.push_back(t);
      }
      if (!mismatch.empty()) {
        finish(false, mismatch);
        continue;
      }
      // The reference: the fp64 golden, or the other backend's run on the same inputs.
      std::vector<Tensor> ref;
      if (o.golden) {
        r.impl = "golden";
        if (Status s = d->golden(p, &ref); !s.ok()) throw Error(s);
      } else {
        std::string used;
        Status s = run_on(*d, p, dev, o.impl, &ref, &used);
        r.impl = used.empty() ? "-" : used;
        if (!s.ok()) throw Error(s);
      }
      JudgeOptions jo;
      jo.standard = file.standard;
      // The recorded backend's rule (its outputs are the ones judged against the golden).
      jo.nonfinite = file.nonfinite_of(found->op, manifest.value("backend", std::string()));
      std::vector<Tensor> base;
      if (file.standard == core::Standard::dbl)
        if (Status s = d->baseline(p, &base); !s.ok()) throw Error(s);
      bool pass = true;
      std::string detail;
      double max_abs = 0, rel_l2 = 0;
      for (size_t i = 0; i < p.outputs.size(); ++i) {
        const TensorView bv = base.empty() ? TensorView() : base[i].view();
        jo.baseline = base.empty() ? nullptr : &bv;
        const Judgement j = judge(recorded[i]->view(), ref[i].view(), jo);
        max_abs = std::max(max_abs, j.max_abs);
        rel_l2 = std::max(rel_l2, j.rel_l2);
        if (!j.pass && pass) {
          pass = false;
          detail = p.outputs[i].name + ": " + j.detail + " (" + std::to_string(j.mismatched) +
                   " mismatched, " + std::to_string(j.unwritten) + " unwritten, " +
                   std::to_string(j.nonfinite) + " non-finite)";
        }
      }
      r.max_abs = max_abs;
      r.rel_l2 = rel_l2;
      finish(pass, detail);
    } catch (const std::exception& ex) {
      finish(false, std::string("error: ") + ex.what());
    }
  }

  Table t({"op", "case", "dtype", "recorded", "against", "impl", "max abs", "rel L2", "verdict"});
  for (const auto& r : rows)
    t.add({r.op, r.case_id, r.variant.empty() ? r.dtype : r.dtype + " " + r.variant,
           manifest.value("backend", "?") + " " + r.recorded_impl, against, r.impl,
           r.max_abs ? fmt_g(*r.max_abs) : "-", r.rel_l2 ? fmt_g(*r.rel_l2) : "-", r.verdict});
  std::cout << "recorded on " << manifest.value("device", "?") << " at "
            << manifest.value("commit", "?") << "; compared against " << against << " on "
            << (o.golden ? std::string("the fp64 golden (cpu)") : device_name(bt)) << "\n";
  std::cout << t.str();
  if (failed) {
    std::cout << "\nFailures (" << failed << "); reproduce each with the command below it:\n";
    for (const auto& r : rows)
      if (r.verdict != "PASS")
        std::cout << "  " << r.op << " " << r.case_id << " " << r.dtype
                  << (r.variant.empty() ? "" : " " + r.variant) << ": " << r.detail << "\n    "
                  << r.reproducer << "\n";
  }
  if (!o.json.empty()) {
    json arr = json::array();
    for (const auto& r : rows)
      arr.push_back({{"op", r.op},
                     {"case", r.case_id},
                     {"dtype", r.dtype},
                     {"variant", r.variant},
                     {"recorded_backend", manifest.value("backend", "?")},
                     {"recorded_device", manifest.value("device", "?")},
                     {"recorded_commit", manifest.value("commit", "?")},
                     {"recorded_impl", r.recorded_impl},
                     {"against", against},
                     {"against_device", o.golden ? std::string("golden") : device_name(bt)},
                     {"impl", r.impl},
                     {"max_abs", r.max_abs ? json(*r.max_abs) : json()},
                     {"rel_l2", r.rel_l2 ? json(*r.rel_l2) : json()},
                     {"verdict", r.verdict},
                     {"detail", r.detail},
                     {"reproducer", r.reproducer},
                     {"commit", project_commit(dir)},
                     {"date", today()}});
    std::ofstream f(o.json);
    f << arr.dump(2) << "\n";
    if (!f) {
      std::cerr << "recops compare: cannot write " << o.json << "\n";
      return 2;
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "\n"
            << rows.size() - static_cast<size_t>(failed) << " passed, " << failed << " failed ("
            << fmt_g(secs, 3) << " s)\n";
  if (rows.empty()) {
    std::cerr << "recops compare: no recorded cases selected\n";
    return 2;
  }
  return failed ? 1 : 0;
}

}  // namespace recops::cli
