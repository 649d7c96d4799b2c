// tools/recops/gen.h: the deterministic generators of docs/cases.md (lengths, offsets, tensor
// values) and element access by dtype. python/recops/testing.py reproduces the same formulas.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "recops/dtype.h"
#include "recops/tensor_view.h"
#include "tools/recops/casefile.h"

namespace recops::cli {

// The seed of a case's k-th tensor (0 = lengths, 1 = first data input, ...).
uint64_t tensor_seed(uint64_t case_seed, uint64_t k);

// L_b for every b (docs/cases.md "Length generators").
std::vector<int64_t> make_lengths(const LengthsSpec& spec, uint64_t case_seed);

// Complete cumsum of lengths: [0, L_0, L_0 + L_1, ...].
std::vector<int64_t> offsets_from_lengths(const std::vector<int64_t>& lengths);

// How a data tensor's values are drawn.
struct FillSpec {
  uint64_t seed = 0;
  std::optional<std::pair<int64_t, int64_t>> range;  // integer dtypes: [lo, hi]
  double scale = 1.0;                                // floating dtypes
};

// The value element i of a tensor gets before rounding to `dtype` (docs/cases.md table).
double generated_value(DType dtype, const FillSpec& f, uint64_t i);

// Writes the generated values into a host view, element i = the i-th in row-major order of the
// view's logical shape, at its strided location.
void fill_view(const TensorView& v, const FillSpec& f);

// Stores an exact integer (integer dtypes) or a double rounded to nearest even (floating dtypes).
void store_value(void* p, DType t, double v);
void store_int(void* p, DType t, int64_t v);
double load_value(const void* p, DType t);
// The bits of bf16_from_double / half_from_double (recops/dtype.h), faster for normal results.
uint16_t bf16_bits_from_double(double x);
uint16_t half_bits_from_double(double x);

// Calls fn(i, element_offset) for the elements i in [begin, end) of a view's logical shape, i in
// row-major order and element_offset in elements from view.data (strides applied).
template <class F>
void for_each_element_in(const TensorView& v, int64_t begin, int64_t end, F&& fn) {
  if (begin >= end) return;
  int64_t idx[kMaxDims] = {};
  int64_t off = 0, rem = begin;
  for (int d = v.ndim - 1; d >= 0; --d) {
    idx[d] = rem % v.sizes[d];
    rem /= v.sizes[d];
    off += idx[d] * v.strides[d];
  }
  for (int64_t i = begin; i < end; ++i) {
    fn(i, off);
    for (int d = v.ndim - 1; d >= 0; --d) {
      if (++idx[d] < v.sizes[d]) {
        off += v.strides[d];
        break;
      }
      off -= v.strides[d] * (v.sizes[d] - 1);
      idx[d] = 0;
    }
  }
}

template <class F>
void for_each_element(const TensorView& v, F&& fn) {
  for_each_element_in(v, 0, v.numel(), fn);
}

}  // namespace recops::cli
