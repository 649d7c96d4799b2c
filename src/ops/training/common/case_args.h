// training/common/case_args.h: the `args:` look-ups the training ops' CLI drivers share (a case's
// number or flag, or the default when the case does not give it).
#pragma once

#include "tools/recops/casefile.h"

namespace recops::cli::training_args {

inline double number(const CaseSpec& cs, const char* name, double def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.f;
}

inline bool flag(const CaseSpec& cs, const char* name, bool def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.b;
}

}  // namespace recops::cli::training_args
