// training/common/row_case.h: what the CLI drivers of the training row ops share (CLI code only):
// the rows/D sizes of x's shape, and for the ops with an optional [D] weight and bias
// (layer_norm, rms_norm_gated) those inputs, their case args and their gradients.
//
// Case args of the affine part: weight, bias (default true: [D] inputs of x's dtype, weight
// ~ U(-1, 1), bias ~ U(-0.5, 0.5)), want_dweight, want_dbias (default true).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ops/training/common/case_args.h"
#include "tools/recops/inputs.h"

namespace recops::cli::row_case {

// {"rows": numel / D, "D": D}, D being the last dim of x's shape.
inline std::vector<std::pair<std::string, int64_t>> sizes(const Shape& shape) {
  const int64_t D = shape.empty() ? 0 : shape.back();
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return {{"rows", D > 0 ? n / D : 0}, {"D", D}};
}

// The affine args and the op's own (`extra`).
inline std::map<std::string, ArgKind> affine_args(std::map<std::string, ArgKind> extra) {
  extra.insert({{"weight", ArgKind::boolean},
                {"bias", ArgKind::boolean},
                {"want_dweight", ArgKind::boolean},
                {"want_dbias", ArgKind::boolean}});
  return extra;
}

// The affine args as the Problem's scalars.
inline void affine_scalars(const CaseSpec& cs, Problem* p) {
  p->scalars["weight"] = training_args::flag(cs, "weight", true);
  p->scalars["bias"] = training_args::flag(cs, "bias", true);
  p->scalars["want_dweight"] = training_args::flag(cs, "want_dweight", true);
  p->scalars["want_dbias"] = training_args::flag(cs, "want_dbias", true);
}

// The weight and bias inputs the case asks for (after affine_scalars).
inline void push_affine_inputs(const CaseSpec& cs, int64_t D, Problem* p) {
  if (p->scalars["weight"] != 0)
    p->inputs.push_back(data_input("weight", p->dtype, {D}, cs.seed + 3, 1.0));
  if (p->scalars["bias"] != 0)
    p->inputs.push_back(data_input("bias", p->dtype, {D}, cs.seed + 4, 0.5));
}

// The backward's dweight and dbias outputs, when it produces them.
inline void push_affine_grads(int64_t D, Problem* p) {
  if (p->scalars["weight"] != 0 && p->scalars["want_dweight"] != 0)
    p->outputs.push_back({"dweight", {D}, p->dtype});
  if (p->scalars["bias"] != 0 && p->scalars["want_dbias"] != 0)
    p->outputs.push_back({"dbias", {D}, p->dtype});
}

// weight and bias, when given, from in[i] on into a (forward or backward Args).
template <class A>
void take_affine(const Problem& p, const std::vector<TensorView>& in, size_t i, A* a) {
  if (p.scalars.at("weight") != 0) a->weight = in[i++];
  if (p.scalars.at("bias") != 0) a->bias = in[i++];
}

// The backward's want_dweight and want_dbias.
template <class A>
void take_wants(const Problem& p, A* a) {
  a->want_dweight = p.scalars.at("want_dweight") != 0;
  a->want_dbias = p.scalars.at("want_dbias") != 0;
}

// The backward's dweight and dbias outputs from out[i] on, when produced (else nullptr).
template <class A>
std::pair<const TensorView*, const TensorView*> affine_grads(const A& a,
                                                             const std::vector<TensorView>& out,
                                                             size_t i) {
  const TensorView* dw = a.weight && a.want_dweight ? &out[i++] : nullptr;
  const TensorView* db = a.bias && a.want_dbias ? &out[i++] : nullptr;
  return {dw, db};
}

}  // namespace recops::cli::row_case
