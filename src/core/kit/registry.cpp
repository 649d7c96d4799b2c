// core/kit/registry.cpp: the registry of every op folder (filled once, from CMake's manifest) and
// the schema string of an OpDef.
#include <string>

#include "core/kit/op_def.h"

namespace recops::kit {

// Defined by the generated manifest (CMake: op_manifest.cpp), which calls each op folder's
// RECOPS_REGISTER_OPS function in folder order.
void register_all_folders(Registry& reg);

const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    register_all_folders(r);
    return r;
  }();
  return reg;
}

const OpDef* find_def(const std::string& name) {
  for (const auto& d : registry().defs)
    if (d.name == name) return &d;
  return nullptr;
}

namespace {
const char* schema_type(const ArgDef& a) {
  switch (a.type) {
    case ArgType::tensor: return "Tensor";
    case ArgType::opt_tensor: return "Tensor?";
    case ArgType::int64: return a.opts.sym ? "SymInt" : "int";
    case ArgType::opt_int64: return a.opts.sym ? "SymInt?" : "int?";
    case ArgType::float64: return "float";
    case ArgType::opt_float64: return "float?";
    case ArgType::boolean: return "bool";
    case ArgType::opt_dtype: return "ScalarType?";
  }
  return "";
}
}  // namespace

std::string OpDef::schema() const {
  std::string s = name + "(";
  bool kw = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgDef& a = args[i];
    if (i) s += ", ";
    if (a.opts.kw && !kw) {
      s += "*, ";
      kw = true;
    }
    s += std::string(schema_type(a)) + " " + a.name;
    if (a.opts.def) s += std::string("=") + a.opts.def;
  }
  s += ") -> ";
  if (outs.size() == 1) return s + "Tensor";
  s += "(";
  for (size_t i = 0; i < outs.size(); ++i) s += i ? ", Tensor" : "Tensor";
  return s + ")";
}

}  // namespace recops::kit

namespace recops {

std::vector<OpInfo> list_ops() {
  return kit::registry().infos;
}

}  // namespace recops
