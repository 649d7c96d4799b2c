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
  // Mutated tensors carry alias sets a, b, ... in argument order; an output of out_mutated
  // repeats its argument's.
  auto alias_of = [this](const std::string& arg) {
    std::string letter;
    char next = 'a';
    for (const ArgDef& a : args) {
      if (!a.opts.mutated) continue;
      if (a.name == arg) letter = std::string(1, next);
      ++next;
    }
    return letter.empty() ? std::string() : "(" + letter + "!)";
  };
  std::string s = name + "(";
  bool kw = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const ArgDef& a = args[i];
    if (i) s += ", ";
    if (a.opts.kw && !kw) {
      s += "*, ";
      kw = true;
    }
    s += std::string(schema_type(a)) + (a.opts.mutated ? alias_of(a.name) : "") + " " + a.name;
    if (a.opts.def) s += std::string("=") + a.opts.def;
  }
  s += ") -> ";
  auto ret = [&](const OutDef& o) {
    return "Tensor" + (o.mutates.empty() ? std::string() : alias_of(o.mutates));
  };
  if (outs.size() == 1) return s + ret(outs[0]);
  s += "(";
  for (size_t i = 0; i < outs.size(); ++i) s += (i ? ", " : "") + ret(outs[i]);
  return s + ")";
}

}  // namespace recops::kit

namespace recops {

std::vector<OpInfo> list_ops() {
  return kit::registry().infos;
}

}  // namespace recops
