// core/tuning.cpp: tuned configurations: the configuration type, reading the tuning files (with
// nlohmann-json, the project's JSON library; a private dependency of the core) and the run-time
// choice.
#include "core/tuning.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "core/cpu_features.h"
#include "core/cuda/runtime.h"

namespace recops {

// ---- TuneConfig -------------------------------------------------------------------------------

int64_t TuneConfig::get(std::string_view name, int64_t fallback) const {
  for (const auto& [k, v] : values)
    if (k == name) return v;
  return fallback;
}

bool TuneConfig::has(std::string_view name) const {
  for (const auto& kv : values)
    if (kv.first == name) return true;
  return false;
}

void TuneConfig::set(std::string_view name, int64_t value) {
  for (auto& [k, v] : values)
    if (k == name) {
      v = value;
      return;
    }
  values.emplace_back(std::string(name), value);
}

std::string TuneConfig::str() const {
  std::string s;
  for (const auto& [k, v] : values) {
    if (!s.empty()) s += ',';
    s += k + "=" + std::to_string(v);
  }
  return s;
}

bool TuneConfig::parse(std::string_view text, TuneConfig* out, std::string* error) {
  TuneConfig c;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(pos, end - pos);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size()) {
      if (error) *error = "expected name=value, got '" + std::string(item) + "'";
      return false;
    }
    const std::string value(item.substr(eq + 1));
    char* stop = nullptr;
    const long long v = std::strtoll(value.c_str(), &stop, 10);
    if (stop == value.c_str() || *stop != '\0') {
      if (error) *error = "'" + value + "' is not an integer";
      return false;
    }
    c.set(item.substr(0, eq), v);
    pos = end + 1;
  }
  *out = std::move(c);
  return true;
}

bool TuneConfig::operator==(const TuneConfig& o) const {
  if (values.size() != o.values.size()) return false;
  for (const auto& [k, v] : values)
    if (!o.has(k) || o.get(k, 0) != v) return false;
  return true;
}

std::string device_slug(std::string_view device) {
  std::string s;
  for (char c : device) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      s += static_cast<char>(std::tolower(u));
    } else if (!s.empty() && s.back() != '-') {
      s += '-';
    }
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  return s.empty() ? "device" : s;
}

namespace {

// ---- the loaded tables ------------------------------------------------------------------------

constexpr int kSchemaVersion = 1;

std::string entry_key(std::string_view device, std::string_view op, std::string_view impl,
                      std::string_view dtype, std::string_view bucket) {
  std::string k;
  for (std::string_view part : {device, op, impl, dtype, bucket}) {
    k += part;
    k += '\x1f';
  }
  return k;
}

struct Tables {
  std::vector<std::string> files;
  std::string where;
  std::vector<TunedEntry> entries;
  std::vector<std::string> errors;
  std::unordered_map<std::string, size_t> index;    // entry_key -> entries[i]
  std::unordered_map<std::string, int> device_ops;  // device + '\x1f' + op -> count
};

void load_file(const std::string& path, Tables* t) {
  std::ifstream in(path);
  if (!in) {
    t->errors.push_back(path + ": cannot read");
    return;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  using nlohmann::json;
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number like 1e999
    t->errors.push_back(path + ": " + e.what());  // names the line and column
    return;
  }
  const json* version =
      root.is_object() && root.contains("version") ? &root.at("version") : nullptr;
  if (!version || !version->is_number()) {
    t->errors.push_back(path + ": field 'version': missing (not a recops tuning file)");
    return;
  }
  if (version->get<double>() != kSchemaVersion) {
    t->errors.push_back(path + ": field 'version': " + version->dump() +
                        " is not the supported version " + std::to_string(kSchemaVersion));
    return;
  }
  const auto field = [](const json& obj, const char* name) -> const json* {
    return obj.is_object() && obj.contains(name) ? &obj.at(name) : nullptr;
  };
  const json* device = field(root, "device");
  const json* entries = field(root, "entries");
  if (!device || !device->is_string() || !entries || !entries->is_array()) {
    t->errors.push_back(path + ": fields 'device' (a string) and 'entries' (a list) are required");
    return;
  }
  for (size_t i = 0; i < entries->size(); ++i) {
    const json& e = (*entries)[i];
    const std::string where = path + ": entries[" + std::to_string(i) + "]";
    auto text_field = [&](const char* name, std::string* out) {
      const json* f = field(e, name);
      if (!f || !f->is_string()) {
        t->errors.push_back(where + ": field '" + name + "': missing or not a string");
        return false;
      }
      *out = f->get<std::string>();
      return true;
    };
    TunedEntry te;
    te.device = device->get<std::string>();
    te.file = path;
    if (!text_field("op", &te.op) || !text_field("impl", &te.impl) ||
        !text_field("dtype", &te.dtype) || !text_field("bucket", &te.bucket))
      continue;
    const json* cfg = field(e, "config");
    if (!cfg || !cfg->is_object()) {
      t->errors.push_back(where + ": field 'config': missing or not an object");
      continue;
    }
    bool ok = true;
    for (const auto& [k, v] : cfg->items()) {  // nlohmann keeps object keys sorted
      // An integer within int64 (the range test first: casting 1e300 is undefined).
      const double x = v.is_number() ? v.get<double>() : 0.5;
      if (!(x >= -9.2e18 && x <= 9.2e18) || x != std::trunc(x)) {
        t->errors.push_back(where + ": field 'config." + k + "': not an integer");
        ok = false;
        break;
      }
      te.config.set(k, static_cast<int64_t>(v.get<double>()));
    }
    if (!ok) continue;
    const std::string key = entry_key(te.device, te.op, te.impl, te.dtype, te.bucket);
    if (auto it = t->index.find(key); it != t->index.end()) {
      t->entries[it->second] = te;  // a later file wins
    } else {
      t->index[key] = t->entries.size();
      t->device_ops[te.device + '\x1f' + te.op] += 1;
      t->entries.push_back(std::move(te));
    }
  }
}

void load_tables(Tables* t) {
  namespace fs = std::filesystem;
  std::string root;
  if (const char* e = std::getenv("RECOPS_TUNING_FILE"); e != nullptr) {
    const std::string v = e;
    t->where = "RECOPS_TUNING_FILE=" + v;
    if (v.empty() || v == "none" || v == "off") return;
    root = v;
  } else if (const char* src = std::getenv("RECOPS_SOURCE_DIR"); src && *src) {
    root = std::string(src) + "/tuning";
    t->where = root + " ($RECOPS_SOURCE_DIR)";
  } else {
#ifdef RECOPS_SOURCE_TUNING_DIR
    root = RECOPS_SOURCE_TUNING_DIR;
    t->where = root + " (the source tree)";
#else
    return;
#endif
  }
  std::error_code ec;
  if (fs::is_directory(root, ec)) {
    for (const auto& de : fs::directory_iterator(root, ec))
      if (de.path().extension() == ".json") t->files.push_back(de.path().string());
    std::sort(t->files.begin(), t->files.end());
  } else if (fs::exists(root, ec)) {
    t->files.push_back(root);
  } else if (std::getenv("RECOPS_TUNING_FILE")) {
    t->errors.push_back(root + ": no such file or directory (RECOPS_TUNING_FILE)");
  }
  for (const auto& f : t->files) load_file(f, t);
}

std::mutex& tables_mutex() {
  static std::mutex m;
  return m;
}

// The current tables; loaded on first use, replaced by reload_tuning(). Readers take a shared
// pointer so that a reload never frees tables in use.
std::shared_ptr<const Tables>& tables_slot() {
  static std::shared_ptr<const Tables> slot;
  return slot;
}

std::shared_ptr<const Tables> tables() {
  std::lock_guard<std::mutex> lock(tables_mutex());
  auto& slot = tables_slot();
  if (!slot) {
    auto t = std::make_shared<Tables>();
    load_tables(t.get());
    slot = std::move(t);
  }
  return slot;
}

bool is_candidate(const TuneConfig& c, const std::vector<TuneConfig>* candidates) {
  if (!candidates) return true;
  return std::find(candidates->begin(), candidates->end(), c) != candidates->end();
}

// `c` with every parameter of `fallback` it does not set added (fallback's order).
TuneConfig completed(const TuneConfig& c, const TuneConfig& fallback) {
  TuneConfig out;
  for (const auto& [k, v] : fallback.values) out.set(k, c.get(k, v));
  for (const auto& [k, v] : c.values)
    if (!fallback.has(k)) out.set(k, v);
  return out;
}

}  // namespace

std::vector<std::string> tuning_files(std::string* where) {
  auto t = tables();
  if (where) *where = t->where;
  return t->files;
}

std::vector<TunedEntry> tuned_entries(const std::string& device) {
  auto t = tables();
  std::vector<TunedEntry> out;
  for (const auto& e : t->entries)
    if (device.empty() || e.device == device) out.push_back(e);
  return out;
}

std::vector<std::string> tuning_load_errors() {
  return tables()->errors;
}

void reload_tuning() {
  std::lock_guard<std::mutex> lock(tables_mutex());
  tables_slot().reset();
}

std::string tuning_device_name(DeviceType backend, int device_index) {
  if (backend == DeviceType::cuda) {
    // cudaGetDeviceProperties costs microseconds: cache the names of the first devices.
    static std::mutex m;
    static std::map<int, std::string> names;
    std::lock_guard<std::mutex> lock(m);
    auto it = names.find(device_index);
    if (it == names.end())
      it = names.emplace(device_index, core::cuda::device_name(device_index)).first;
    return it->second;
  }
  static const std::string cpu = [] {
    std::string n = core::cpu_name();
    return n.empty() ? std::string("cpu") : n;
  }();
  return cpu;
}

namespace core {

Status resolve_config(const TuneQuery& q, const Context& ctx, TuneConfig* out) {
  std::string source = "default";
  TuneConfig chosen = q.fallback;
  if (ctx.tune_config) {
    chosen = completed(*ctx.tune_config, q.fallback);
    for (const auto& [k, v] : ctx.tune_config->values)
      RECOPS_CHECK(q.fallback.has(k), q.op, " (", q.impl, "): tune_config parameter '", k,
                   "' is not a parameter of this implementation (it takes ", q.fallback.str(), ")");
    RECOPS_CHECK(is_candidate(chosen, q.candidates), q.op, " (", q.impl, "): tune_config '",
                 chosen.str(), "' is not one of this implementation's candidate configurations");
    source = "forced";
  } else {
    auto t = tables();
    if (!t->device_ops.empty()) {
      const std::string dev = tuning_device_name(q.backend, q.device_index);
      if (t->device_ops.count(dev + '\x1f' + std::string(q.op))) {
        auto it = t->index.find(entry_key(dev, q.op, q.impl, dtype_name(q.dtype), q.bucket));
        if (it != t->index.end()) {
          TuneConfig c = completed(t->entries[it->second].config, q.fallback);
          // An entry naming a configuration the implementation no longer offers is ignored.
          if (is_candidate(c, q.candidates)) {
            chosen = std::move(c);
            source = "tuned";
          }
        }
      }
    }
  }
  if (ctx.tune_used) {
    ctx.tune_used->impl = std::string(q.impl);
    ctx.tune_used->bucket = q.bucket;
    ctx.tune_used->config = chosen;
    ctx.tune_used->source = source;
  }
  *out = std::move(chosen);
  return Status::Ok();
}

std::string pow2_bucket(int64_t n, int step) {
  int k = 0;
  while (k < 62 && (int64_t{1} << k) < n) ++k;
  if (step > 1) k = (k + step - 1) / step * step;
  return "2^" + std::to_string(k);
}

std::vector<TuneConfig> config_grid(
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& params) {
  std::vector<TuneConfig> out(1);
  for (const auto& [name, values] : params) {
    std::vector<TuneConfig> next;
    for (const auto& c : out)
      for (int64_t v : values) {
        TuneConfig n = c;
        n.set(name, v);
        next.push_back(std::move(n));
      }
    out = std::move(next);
  }
  return out;
}

}  // namespace core
}  // namespace recops
