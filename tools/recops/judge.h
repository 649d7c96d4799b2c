// tools/recops/judge.h: the accuracy standard (accuracy.md) applied to one output tensor.
//
// exact  : bit-identical, except that any NaN matches any NaN other than the poison and +0 == -0.
// single : rel_i = |out_i - gold_i| / max(|gold_i|, small); mean(rel) <= T, max(rel) <= 10 T;
//          where |gold_i| < small the absolute error must be <= T * small instead.
// double : err(out) <= 2 err(baseline) + T/8 for max-abs and for relative L2, where the baseline
//          is the plain same-precision implementation the driver supplies. The golden here is
//          the fp64 result rounded once to the output dtype (accuracy.md's is fp64), so the
//          max-abs term takes max_i(|out_i - gold_i| - ulp(gold_i)): an element one output ulp
//          from the rounded golden is a rounding of a value next to a midpoint, not an error
//          (a bf16/fp16 ulp exceeds T/8 for |gold| >= 1/4). The relative L2 term is unchanged, so
//          a systematic one-ulp error still fails.
// Always : an element still holding the poison is unwritten (fails); NaN/Inf where gold is finite
//          fails; a non-finite gold needs the same non-finite value.
// T and `small` come from src/core/tolerance.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/tolerance.h"
#include "recops/tensor_view.h"

namespace recops::cli {

// Bit pattern poisoning an output before a run: a NaN with a payload no op produces for floats,
// an unlikely sentinel for integers. variant 1 gives a second, different pattern (used to
// disambiguate elements whose golden value equals the first poison).
uint64_t poison_bits(DType t, int variant = 0);
// Fills every element of a contiguous host buffer of `n` elements with the poison.
void poison_fill(void* data, DType t, int64_t n, int variant = 0);

struct Judgement {
  bool pass = true;
  double max_abs = 0;                // over elements where both are finite
  double rel_l2 = 0;                 // ||out - gold|| / ||gold|| over those elements
  double mean_rel = 0, max_rel = 0;  // single standard
  int64_t mismatched = 0;            // elements failing the standard
  int64_t unwritten = 0;             // elements still holding the poison
  int64_t nonfinite = 0;             // NaN/Inf where gold is finite (or the wrong non-finite)
  // The non-finite failures by kind (floating outputs): gold non-finite but out finite (a value
  // silently made finite), gold finite but out non-finite, both non-finite but different
  // (NaN vs ±inf, or +inf vs -inf).
  int64_t nf_missing = 0, nf_extra = 0, nf_class = 0;
  int64_t ambiguous = 0;  // gold equals the poison: needs a second run with the other poison
  std::string detail;     // first failing element, or the failed bound
};

struct JudgeOptions {
  core::Standard standard = core::Standard::exact;
  core::NonfiniteRule nonfinite = core::NonfiniteRule::exact;  // cases.yaml's `nonfinite:`
  int poison_variant = 0;
  // `small` = smallest_normal(dtype) * magnitude; magnitude <= 0 means the rms of gold.
  double magnitude = 0;
  const TensorView* baseline = nullptr;  // double standard: the plain implementation's output
};

// out and gold: host tensors of the same logical shape and dtype (strides honoured).
Judgement judge(const TensorView& out, const TensorView& gold, const JudgeOptions& opt);

// True when two host tensors hold the same bits everywhere (the --repeat rule).
bool bit_identical(const TensorView& a, const TensorView& b, int64_t* first_diff);

}  // namespace recops::cli
