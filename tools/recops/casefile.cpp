// tools/recops/casefile.cpp: strict parsing of cases.yaml / perf.yaml (docs/cases.md).
#include "tools/recops/casefile.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace recops::cli {
namespace {

Loc loc_of(const YAML::Node& n) {
  const YAML::Mark m = n.Mark();
  if (m.is_null()) return {};
  return {m.line + 1, m.column + 1};
}

// Builds and throws the located error.
struct Ctx {
  const std::string& path;
  std::string case_id;  // "" outside a case

  [[noreturn]] void fail(Loc at, const std::string& field, const std::string& msg) const {
    std::ostringstream os;
    os << path;
    if (at.line > 0) os << ":" << at.line << ":" << at.column;
    os << ":";
    if (!case_id.empty()) os << " case '" << case_id << "':";
    if (!field.empty()) os << " field '" << field << "':";
    os << " " << msg;
    throw CaseFileError(os.str());
  }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& field,
                         const std::string& msg) const {
    fail(loc_of(n), field, msg);
  }
};

std::string scalar(const Ctx& c, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) c.fail(n, field, "expected a scalar value");
  return n.Scalar();
}

int64_t to_int(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  int64_t v = 0;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec != std::errc() || p != e || b == e)
    c.fail(n, field, "expected an integer, got '" + s + "'");
  return v;
}

int64_t to_nonneg(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const int64_t v = to_int(c, n, field);
  if (v < 0) c.fail(n, field, "expected an integer >= 0, got " + std::to_string(v));
  return v;
}

double to_number(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  if (s == "nan" || s == ".nan" || s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf" || s == ".inf" || s == "+inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf" || s == "-.inf") return -std::numeric_limits<double>::infinity();
  if (s.empty()) c.fail(n, field, "expected a number, got an empty value");
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || errno == ERANGE || std::isnan(v) || std::isinf(v))
    c.fail(n, field, "expected a number (or nan, inf, -inf), got '" + s + "'");
  return v;
}

bool to_bool(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  if (s == "true") return true;
  if (s == "false") return false;
  c.fail(n, field, "expected true or false, got '" + s + "'");
}

std::vector<int64_t> to_int_list(const Ctx& c, const YAML::Node& n, const std::string& field,
                                 bool nonneg) {
  if (!n.IsSequence()) c.fail(n, field, "expected a list of integers");
  std::vector<int64_t> v;
  for (const auto& x : n) v.push_back(nonneg ? to_nonneg(c, x, field) : to_int(c, x, field));
  return v;
}

std::vector<std::string> to_str_list(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::vector<std::string> v;
  if (n.IsScalar()) {
    v.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    for (const auto& x : n) v.push_back(scalar(c, x, field));
  } else {
    c.fail(n, field, "expected a string or a list of strings");
  }
  return v;
}

// A tag must be one the case's ops read (OpSchema::tags), or `large`.
void check_tag(const Ctx& c, const YAML::Node& n, const CaseSchema& schema,
               const std::vector<std::string>& ops, const std::string& tag) {
  const std::string key = tag.substr(0, tag.find('='));
  if (key == "large") return;
  std::set<std::string> known = {"large"};
  for (const auto& o : ops) {
    const auto& t = schema.ops.at(o).tags;
    if (!t) return;  // this op's driver takes any tag
    if (t->count(key)) return;
    known.insert(t->begin(), t->end());
  }
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  c.fail(n, "tags", "unknown tag '" + key + "' for op " + ops.front() + " (known: " + list + ")");
}

// `args:`: a mapping from the ops' declared argument names to values of their kinds.
void parse_args(const Ctx& c, const YAML::Node& n, const CaseSchema& schema,
                const std::vector<std::string>& ops, std::map<std::string, ArgValue>* out) {
  if (!n.IsMap()) c.fail(n, "args", "expected a mapping of argument names to values");
  for (const auto& kv : n) {
    const std::string key = kv.first.Scalar();
    const std::string field = "args." + key;
    std::optional<ArgKind> kind;
    std::set<std::string> known;
    for (const auto& o : ops) {
      const auto& a = schema.ops.at(o).args;
      if (auto it = a.find(key); it != a.end() && !kind) kind = it->second;
      for (const auto& [name, _] : a) known.insert(name);
    }
    if (!kind) {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      c.fail(kv.first, field,
             "unknown argument for op " + ops.front() +
                 " (known: " + (list.empty() ? "none" : list) + ")");
    }
    ArgValue v;
    v.kind = *kind;
    v.loc = loc_of(kv.second);
    switch (*kind) {
      case ArgKind::integer:
        v.i = to_int(c, kv.second, field);
        v.f = static_cast<double>(v.i);
        break;
      case ArgKind::number: v.f = to_number(c, kv.second, field); break;
      case ArgKind::boolean: v.b = to_bool(c, kv.second, field); break;
      case ArgKind::text: v.s = scalar(c, kv.second, field); break;
      case ArgKind::int_list: v.list = to_int_list(c, kv.second, field, false); break;
    }
    (*out)[key] = std::move(v);
  }
}

DType to_dtype(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  if (auto t = dtype_from_name(s)) return *t;
  std::string all;
  for (DType t : kAllDTypes) all += (all.empty() ? "" : ", ") + std::string(dtype_name(t));
  c.fail(n, field, "unknown dtype '" + s + "' (known: " + all + ")");
}

std::vector<DType> to_dtype_list(const Ctx& c, const YAML::Node& n, const std::string& field) {
  std::vector<DType> v;
  if (n.IsSequence()) {
    for (const auto& x : n) v.push_back(to_dtype(c, x, field));
    if (v.empty()) c.fail(n, field, "the list is empty");
  } else {
    v.push_back(to_dtype(c, n, field));
  }
  return v;
}

core::Standard to_standard(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  if (s == "exact") return core::Standard::exact;
  if (s == "single") return core::Standard::single;
  if (s == "double") return core::Standard::dbl;
  c.fail(n, field, "expected exact, single or double, got '" + s + "'");
}

core::NonfiniteRule to_nonfinite_rule(const Ctx& c, const YAML::Node& n, const std::string& field) {
  const std::string s = scalar(c, n, field);
  if (s == "exact") return core::NonfiniteRule::exact;
  if (s == "pattern") return core::NonfiniteRule::pattern;
  if (s == "covers") return core::NonfiniteRule::covers;
  c.fail(n, field, "expected exact, pattern or covers, got '" + s + "'");
}

// Walks a mapping, rejecting duplicate keys and non-scalar keys.
template <class F>
void for_each_key(const Ctx& c, const YAML::Node& map, const std::string& what, F&& fn) {
  if (!map.IsMap()) c.fail(map, "", "expected a mapping for " + what);
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) c.fail(kv.first, "", "a key of " + what + " is not a plain name");
    const std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) c.fail(kv.first, key, "duplicate key in " + what);
    fn(key, kv.first, kv.second);
  }
}

// max_memory: {x_output: F, bytes: N}, either or both.
void to_max_memory(const Ctx& c, const YAML::Node& n, CaseSpec* cs) {
  if (!n.IsMap()) c.fail(n, "max_memory", "expected a mapping such as {x_output: 1.1}");
  for_each_key(c, n, "max_memory",
               [&](const std::string& k, const YAML::Node& kn, const YAML::Node& v) {
                 if (k == "x_output") {
                   cs->max_memory_x_output = to_number(c, v, "max_memory.x_output");
                   if (!(*cs->max_memory_x_output >= 0))
                     c.fail(v, "max_memory.x_output", "expected a number >= 0");
                 } else if (k == "bytes") {
                   cs->max_memory_bytes = to_nonneg(c, v, "max_memory.bytes");
                 } else {
                   c.fail(kn, "max_memory", "unknown key '" + k + "' (known: x_output, bytes)");
                 }
               });
}

LengthsSpec to_lengths(const Ctx& c, const YAML::Node& n) {
  LengthsSpec L;
  if (n.IsSequence()) {
    L.explicit_lengths = to_int_list(c, n, "lengths", /*nonneg=*/true);
    L.B = static_cast<int64_t>(L.explicit_lengths.size());
    return L;
  }
  if (!n.IsMap()) c.fail(n, "lengths", "expected a list of lengths or {gen: NAME, B: .., max: ..}");
  bool has_B = false, has_max = false, has_lo = false, has_hi = false;
  for_each_key(
      c, n, "lengths", [&](const std::string& k, const YAML::Node& kn, const YAML::Node& v) {
        const std::string f = "lengths." + k;
        if (k == "gen") {
          L.gen = scalar(c, v, f);
          if (L.gen != "uniform" && L.gen != "skewed" && L.gen != "empty" && L.gen != "all_max" &&
              L.gen != "range")
            c.fail(v, f,
                   "unknown generator '" + L.gen + "' (uniform, skewed, empty, all_max, range)");
        } else if (k == "B") {
          L.B = to_nonneg(c, v, f);
          has_B = true;
        } else if (k == "max") {
          L.max = to_nonneg(c, v, f);
          has_max = true;
        } else if (k == "lo") {
          L.lo = to_nonneg(c, v, f);
          has_lo = true;
        } else if (k == "hi") {
          L.hi = to_nonneg(c, v, f);
          has_hi = true;
        } else {
          c.fail(kn, f, "unknown field (gen, B, max, lo, hi)");
        }
      });
  if (L.gen.empty()) c.fail(n, "lengths.gen", "missing field");
  if (!has_B) c.fail(n, "lengths.B", "missing field");
  if (L.gen == "range") {
    if (!has_lo || !has_hi) c.fail(n, "lengths", "gen: range needs lo and hi");
    if (L.lo > L.hi) c.fail(n, "lengths", "lo > hi");
  } else if (!has_max && L.gen != "empty") {
    c.fail(n, "lengths.max", "missing field");
  }
  // Generated tensors must stay materialisable: a guard against typos such as B: 1e12.
  constexpr int64_t kMaxB = int64_t{1} << 31;
  if (L.B > kMaxB) c.fail(n, "lengths.B", "B larger than 2^31 is not supported");
  if (L.max > kMaxB || L.hi > kMaxB)
    c.fail(n, "lengths", "lengths larger than 2^31 are not supported");
  return L;
}

CaseSpec parse_case(const Ctx& file_ctx, const YAML::Node& n, const std::string& file_op,
                    const CaseSchema& schema, FileKind kind) {
  Ctx c{file_ctx.path, ""};
  if (!n.IsMap()) c.fail(n, "", "each case must be a mapping with at least an `id`");
  CaseSpec cs;
  cs.loc = loc_of(n);
  // The id first, so that every later error names the case.
  if (const YAML::Node idn = n["id"]; idn) {
    cs.id = scalar(c, idn, "id");
    if (cs.id.empty()) c.fail(idn, "id", "empty id");
    for (char ch : cs.id)
      if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.'))
        c.fail(idn, "id",
               "ids use letters, digits, '_', '-' and '.' only (they go on command lines)");
  } else {
    c.fail(n, "id", "missing field");
  }
  c.case_id = cs.id;
  // Ops this case runs; their schemas decide which fields are allowed.
  if (const YAML::Node on = n["op"]; on) {
    cs.ops = to_str_list(c, on, "op");
    if (cs.ops.empty()) c.fail(on, "op", "the list is empty");
    for (const auto& o : cs.ops) {
      auto it = schema.ops.find(o);
      if (it == schema.ops.end()) c.fail(on, "op", "unknown op '" + o + "'");
      if (it->second.folder != schema.ops.at(file_op).folder)
        c.fail(on, "op",
               "op '" + o + "' belongs to src/ops/" + it->second.folder +
                   ", not to this file's folder");
    }
  }
  const std::vector<std::string> ops = cs.ops.empty() ? std::vector<std::string>{file_op} : cs.ops;
  for_each_key(c, n, "a case",
               [&](const std::string& k, const YAML::Node& kn, const YAML::Node& v) {
                 bool allowed = common_fields().count(k) > 0;
                 for (const auto& o : ops)
                   allowed = allowed || schema.ops.at(o).fields.count(k) > 0;
                 if (!allowed) {
                   std::string known;
                   std::set<std::string> all = common_fields();
                   for (const auto& o : ops)
                     all.insert(schema.ops.at(o).fields.begin(), schema.ops.at(o).fields.end());
                   for (const auto& f : all) known += (known.empty() ? "" : ", ") + f;
                   c.fail(kn, k, "unknown field for op " + ops.front() + " (known: " + known + ")");
                 }
                 if (k == "id" || k == "op") {
                   // handled above
                 } else if (k == "seed") {
                   const int64_t s = to_nonneg(c, v, k);
                   cs.seed = static_cast<uint64_t>(s);
                 } else if (k == "dtype") {
                   cs.dtypes = to_dtype_list(c, v, k);
                 } else if (k == "offsets_dtype") {
                   cs.offsets_dtypes = to_dtype_list(c, v, k);
                 } else if (k == "out_dtype") {
                   cs.out_dtypes = to_dtype_list(c, v, k);
                 } else if (k == "lengths") {
                   cs.lengths = to_lengths(c, v);
                 } else if (k == "offsets") {
                   cs.offsets = to_int_list(c, v, k, false);
                 } else if (k == "offsets_shape") {
                   cs.offsets_shape = to_int_list(c, v, k, true);
                 } else if (k == "E") {
                   cs.E = to_int_list(c, v, k, true);
                   if (cs.E.size() > 6) c.fail(v, k, "at most 6 trailing dims");
                 } else if (k == "max_seq_len") {
                   cs.max_seq_len = to_int(c, v, k);
                 } else if (k == "padding_value") {
                   cs.padding_value = to_number(c, v, k);
                 } else if (k == "row_pad") {
                   cs.row_pad = to_nonneg(c, v, k);
                 } else if (k == "S") {
                   cs.S = to_nonneg(c, v, k);
                 } else if (k == "total_L") {
                   cs.total_L = to_int(c, v, k);
                 } else if (k == "out_shape") {
                   cs.out_shape = to_int_list(c, v, k, true);
                   if (cs.out_shape->size() > 8) c.fail(v, k, "at most 8 dims");
                 } else if (k == "shape") {
                   cs.shape = to_int_list(c, v, k, true);
                   if (cs.shape->size() > 8) c.fail(v, k, "at most 8 dims");
                 } else if (k == "range") {
                   auto r = to_int_list(c, v, k, false);
                   if (r.size() != 2 || r[0] > r[1])
                     c.fail(v, k, "expected [lo, hi] with lo <= hi");
                   cs.range = {r[0], r[1]};
                 } else if (k == "scale") {
                   cs.scale = to_number(c, v, k);
                 } else if (k == "tags") {
                   for (const auto& t : to_str_list(c, v, k)) {
                     check_tag(c, v, schema, ops, t);
                     cs.tags.insert(t);
                   }
                 } else if (k == "args") {
                   parse_args(c, v, schema, ops, &cs.args);
                 } else if (k == "backends") {
                   for (const auto& b : to_str_list(c, v, k)) {
                     if (b != "cpu" && b != "cuda")
                       c.fail(v, k, "unknown backend '" + b + "' (cpu, cuda)");
                     cs.backends.insert(b);
                   }
                 } else if (k == "expect_error") {
                   cs.expect_error = scalar(c, v, k);
                   if (cs.expect_error->empty()) c.fail(v, k, "empty text would match any error");
                   if (kind == FileKind::perf) c.fail(kn, k, "perf shapes cannot expect errors");
                 } else if (k == "deterministic") {
                   cs.deterministic = to_bool(c, v, k);
                 } else if (k == "note") {
                   cs.note = scalar(c, v, k);
                 } else if (k == "max_memory") {
                   if (kind != FileKind::perf)
                     c.fail(kn, k, "a perf.yaml field (bench enforces it)");
                   to_max_memory(c, v, &cs);
                 } else {
                   c.fail(kn, k, "field is allowed by the schema but not understood by the parser");
                 }
               });
  if (cs.lengths && cs.offsets) c.fail(n, "offsets", "give either lengths or offsets, not both");
  // Bound every generated tensor: no field may ask for more elements than a test can hold.
  auto prod_ok = [](const std::vector<int64_t>& v) {
    double p = 1;
    for (int64_t x : v) p *= static_cast<double>(x);
    return p < 0x1p40;
  };
  if (!prod_ok(cs.E)) c.fail(n, "E", "the trailing dims hold too many elements");
  if (cs.shape && !prod_ok(*cs.shape)) c.fail(n, "shape", "too many elements");
  if (cs.out_shape && !prod_ok(*cs.out_shape)) c.fail(n, "out_shape", "too many elements");
  return cs;
}

}  // namespace

const std::set<std::string>& common_fields() {
  static const std::set<std::string> f = {
      "id",           "op",       "seed",          "dtype", "tags",      "args",
      "expect_error", "backends", "deterministic", "note",  "max_memory"};
  return f;
}

CaseFile parse_case_text(const std::string& text, const std::string& path, FileKind kind,
                         const CaseSchema& schema) {
  const Ctx c{path, ""};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Loc at;
    if (!e.mark.is_null()) at = {e.mark.line + 1, e.mark.column + 1};
    c.fail(at, "", "YAML syntax error: " + e.msg);
  }
  CaseFile f;
  f.path = path;
  try {
    if (!root.IsMap()) c.fail(root, "", "the file must be a mapping with `op` and `cases`");
    const YAML::Node opn = root["op"];
    if (!opn) c.fail(root, "op", "missing field");
    f.op = scalar(c, opn, "op");
    if (!schema.ops.count(f.op)) {
      std::string known;
      for (const auto& [name, _] : schema.ops) known += (known.empty() ? "" : ", ") + name;
      c.fail(opn, "op", "unknown op '" + f.op + "' (known: " + known + ")");
    }
    const char* list_key = kind == FileKind::cases ? "cases" : "shapes";
    bool has_list = false;
    for_each_key(
        c, root, "the file", [&](const std::string& k, const YAML::Node& kn, const YAML::Node& v) {
          if (k == "op" || k == "note") {
            if (!v.IsScalar()) c.fail(v, k, "expected a scalar");
          } else if (k == "standard") {
            if (v.IsMap()) {
              // Per output: {out: exact}. Our ops have one output named `out`.
              for_each_key(c, v, "standard",
                           [&](const std::string& o, const YAML::Node&, const YAML::Node& s) {
                             if (o != "out")
                               c.fail(v, "standard." + o,
                                      "unknown output (the ops here have `out`)");
                             f.standard = to_standard(c, s, "standard." + o);
                           });
            } else {
              f.standard = to_standard(c, v, k);
            }
          } else if (k == "nonfinite" && kind == FileKind::cases) {
            if (v.IsMap()) {
              for_each_key(
                  c, v, "nonfinite",
                  [&](const std::string& o, const YAML::Node& on, const YAML::Node& r) {
                    if (!schema.ops.count(o))
                      c.fail(on, "nonfinite." + o, "unknown op '" + o + "'");
                    if (!r.IsMap()) {
                      f.nonfinite[o] = to_nonfinite_rule(c, r, "nonfinite." + o);
                      return;
                    }
                    for_each_key(
                        c, r, "nonfinite." + o,
                        [&](const std::string& be, const YAML::Node&, const YAML::Node& x) {
                          if (be != "cpu" && be != "cuda")
                            c.fail(r, "nonfinite." + o + "." + be, "unknown backend (cpu, cuda)");
                          f.nonfinite[o + "@" + be] =
                              to_nonfinite_rule(c, x, "nonfinite." + o + "." + be);
                        });
                  });
            } else {
              f.nonfinite[""] = to_nonfinite_rule(c, v, k);
            }
          } else if (k == list_key) {
            has_list = true;
            if (!v.IsSequence()) c.fail(v, k, "expected a list of cases");
            std::map<std::string, Loc> ids;
            for (const auto& cn : v) {
              CaseSpec cs = parse_case(c, cn, f.op, schema, kind);
              if (auto it = ids.find(cs.id); it != ids.end())
                Ctx{path, cs.id}.fail(
                    cs.loc, "id",
                    "duplicate id (first at line " + std::to_string(it->second.line) + ")");
              ids[cs.id] = cs.loc;
              f.cases.push_back(std::move(cs));
            }
          } else if (k == "baselines" && kind == FileKind::perf) {
            f.baselines_line = loc_of(kn).line;
            if (v.IsNull()) return;
            for_each_key(
                c, v, "baselines",
                [&](const std::string& dev, const YAML::Node&, const YAML::Node& dv) {
                  if (dv.IsNull()) return;
                  for_each_key(
                      c, dv, "baselines of " + dev,
                      [&](const std::string& key, const YAML::Node&, const YAML::Node& bv) {
                        Baseline b;
                        bool has_time = false;
                        for_each_key(
                            c, bv, "baseline " + key,
                            [&](const std::string& bk, const YAML::Node& bkn, const YAML::Node& x) {
                              const std::string fld = "baselines." + key + "." + bk;
                              if (bk == "time_ms") {
                                b.time_ms = to_number(c, x, fld);
                                has_time = true;
                              } else if (bk == "commit") {
                                b.commit = scalar(c, x, fld);
                              } else if (bk == "date") {
                                b.date = scalar(c, x, fld);
                              } else if (bk != "gbps" && bk != "impl") {
                                c.fail(bkn, fld,
                                       "unknown field (time_ms, gbps, impl, commit, date)");
                              }
                            });
                        if (!has_time || !(b.time_ms > 0))
                          c.fail(bv, "baselines." + key + ".time_ms", "missing or not positive");
                        f.baselines[dev][key] = b;
                      });
                });
          } else {
            c.fail(kn, k,
                   std::string("unknown top-level field (op, standard, note, ") + list_key +
                       (kind == FileKind::perf ? ", baselines)" : ", nonfinite)"));
          }
        });
    if (!has_list) c.fail(root, list_key, "missing field");
  } catch (const YAML::Exception& e) {
    // yaml-cpp conversion errors that slipped past the checks above still get a location.
    Loc at;
    if (!e.mark.is_null()) at = {e.mark.line + 1, e.mark.column + 1};
    c.fail(at, "", e.msg);
  }
  return f;
}

CaseFile load_case_file(const std::string& path, FileKind kind, const CaseSchema& schema) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CaseFileError(path + ": cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_case_text(ss.str(), path, kind, schema);
}

std::vector<CaseRow> expand(const CaseFile& f) {
  std::vector<CaseRow> rows;
  for (const auto& cs : f.cases) {
    const std::vector<std::string> ops = cs.ops.empty() ? std::vector<std::string>{f.op} : cs.ops;
    std::vector<std::optional<DType>> dts, outs;
    for (DType t : cs.dtypes) dts.push_back(t);
    if (dts.empty()) dts.push_back(std::nullopt);
    for (DType t : cs.out_dtypes) outs.push_back(t);
    if (outs.empty()) outs.push_back(std::nullopt);
    std::vector<DType> offs = cs.offsets_dtypes;
    if (offs.empty()) offs.push_back(DType::int64);
    for (const auto& op : ops)
      for (const auto& dt : dts)
        for (DType od : offs)
          for (const auto& out : outs) rows.push_back({&cs, op, dt, od, out});
  }
  return rows;
}

std::string baseline_key(const std::string& op, const std::string& id, DType dtype) {
  return op + "/" + id + "/" + std::string(dtype_name(dtype));
}

}  // namespace recops::cli
