// training/common/case_args.h: what the training ops' CLI drivers share: the `args:` look-ups (a
// case's number, flag or choice of names, or the default when the case does not give it) and the
// driver of ops whose golden needs a workspace.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "tools/recops/casefile.h"
#include "tools/recops/driver.h"
#include "tools/recops/inputs.h"

namespace recops::cli::training_args {

inline double number(const CaseSpec& cs, const char* name, double def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.f;
}

inline bool flag(const CaseSpec& cs, const char* name, bool def) {
  const auto it = cs.args.find(name);
  return it == cs.args.end() ? def : it->second.b;
}

// A text arg among `names`: its position; the case without it: 0; another name: names.size()
// (passed on for the refusal cases).
inline int choice(const CaseSpec& cs, const char* name, std::initializer_list<const char*> names) {
  const auto it = cs.args.find(name);
  if (it == cs.args.end()) return 0;
  int i = 0;
  for (const char* n : names) {
    if (it->second.s == n) return i;
    ++i;
  }
  return i;
}

// The fp64 golden: the reference implementation on the host, with the workspace the entry requires.
inline Status reference_with_workspace(const Driver& d, const Problem& p,
                                       std::vector<Tensor>* out) {
  *out = alloc_outputs(p, Device::cpu());
  const auto in = views(p.inputs);
  const auto o = views(*out);
  const size_t bytes = d.workspace_bytes(p, in, o);
  Tensor ws = Tensor::empty({static_cast<int64_t>(std::max<size_t>(1, bytes))}, DType::uint8);
  Context ctx;
  ctx.impl = "reference";
  ctx.workspace = ws.data();
  ctx.workspace_bytes = bytes;
  return d.run(p, in, o, ctx);
}

// A FixedDriver whose golden is the reference with the workspace the entry requires, and whose
// byte floor is every input read once and every output written once (io_bytes).
class WorkspaceDriver : public FixedDriver {
 public:
  using FixedDriver::FixedDriver;
  Status golden(const Problem& p, std::vector<Tensor>* out) const override {
    return reference_with_workspace(*this, p, out);
  }
  double bytes(const Problem& p) const override { return io_bytes(p); }
};

// The varlen time axis of a GDN case (shape [B, T, ...]): with `lengths` or `offsets` the case is
// packed, *off gets the offsets input (p->offsets their values) and T = the last offset, or the
// `T` arg (a mismatch case). *packed says which.
inline Status packed_time(const CaseRow& row, Problem* p, Shape* shape, Input* off, bool* packed) {
  const CaseSpec& cs = *row.spec;
  *packed = cs.lengths || cs.offsets;
  if (!*packed) return Status::Ok();
  RECOPS_RETURN_IF_ERROR(make_offsets_input(row, off, &p->offsets));
  const int64_t last = p->offsets.empty() ? 0 : std::max<int64_t>(0, p->offsets.back());
  (*shape)[1] = static_cast<int64_t>(number(cs, "T", static_cast<double>(last)));
  return Status::Ok();
}

// f(first flattened row, length) for every sequence: the B batch rows of T positions, or the
// packed offsets clamped to [0, T].
template <class F>
void for_each_sequence(const std::vector<int64_t>& offsets, bool packed, int64_t B, int64_t T,
                       F f) {
  if (!packed) {
    for (int64_t b = 0; b < B; ++b) f(b * T, T);
    return;
  }
  for (size_t n = 0; n + 1 < offsets.size(); ++n) {
    const int64_t lo = std::clamp<int64_t>(offsets[n], 0, T);
    const int64_t hi = std::clamp<int64_t>(offsets[n + 1], lo, T);
    f(lo, hi - lo);
  }
}

}  // namespace recops::cli::training_args
