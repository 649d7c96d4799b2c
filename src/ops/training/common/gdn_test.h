// training/common/gdn_test.h: the small helpers that the GDN sub-ops' C++ tests share (test code
// only): a CPU tensor's fp32 or fp64 data, a tensor filled from a function of the flat index, and
// the check that a call was refused with a given text in its message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "recops/tensor.h"

namespace recops::gdn_test {

inline float* f32(Tensor& t) {
  return static_cast<float*>(t.data());
}

inline double* f64(Tensor& t) {
  return static_cast<double*>(t.data());
}

// A CPU tensor of sizes s with element i = f(i): fp64 where f returns double, else fp32.
template <class F>
Tensor filled(const Shape& s, F f) {
  using R = decltype(f(int64_t{0}));
  constexpr bool wide = std::is_same_v<R, double>;
  Tensor t = Tensor::empty(s, wide ? DType::fp64 : DType::fp32);
  for (int64_t i = 0; i < t.view().numel(); ++i) {
    if constexpr (wide)
      f64(t)[i] = f(i);
    else
      f32(t)[i] = static_cast<float>(f(i));
  }
  return t;
}

// s is a refusal whose message contains `text`.
inline void expect_error(const Status& s, const char* text) {
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
}

}  // namespace recops::gdn_test
