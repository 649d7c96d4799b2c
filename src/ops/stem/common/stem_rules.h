// stem_indexer/stem_rules.h: the score-independent rules of spec §3.2 (visible count, forced
// set, position-decay budget) and the rank key of step 5, written once for the reference, the CPU
// and the CUDA code (host and device). Every float step is an explicit fp32 operation; the one
// fused multiply-add is std::fmaf / __fmaf_rn. The CPU files that include this are built at the
// baseline x86-64 ISA (no FMA instructions to contract into) and CUDA uses the _rn intrinsics,
// so no compiler contraction changes the budget.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define RECOPS_STEM_HD __host__ __device__ __forceinline__
#else
#define RECOPS_STEM_HD inline
#endif

namespace recops::ops::stem {

inline constexpr int64_t kTierMedium = 56;  // P at which the medium tier starts
inline constexpr int64_t kTierLarge = 160;  // P at which the large tier starts
inline constexpr int64_t kBudgetCap = 256;  // K̂ never exceeds this

RECOPS_STEM_HD int64_t ceil_div(int64_t a, int64_t b) {
  return a <= 0 ? 0 : (a - 1) / b + 1;  // b > 0; no a + b overflow
}

RECOPS_STEM_HD float f32_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
RECOPS_STEM_HD float f32_sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
RECOPS_STEM_HD float f32_div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}
RECOPS_STEM_HD float f32_fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fmaf(a, b, c);
#endif
}

// The attributes of §3 that the rules use, converted once (floats to fp32 on entry).
struct StemRules {
  bool causal = true;
  int64_t Bs = 128;
  int64_t initial_blocks = 4, window_size = 4;
  float alpha = 1.0f;
  float rate_medium = 0.2f, rate_large = 0.1f;
  int64_t bias_medium = 30, bias_large = 30;
};

// The per-batch quantities of steps 2 and 6 (block counts of the lengths, the prompt tier's Ks),
// computed once per batch; visible_blocks and budget_k below are these plus the per-row steps.
struct BatchRules {
  int64_t Qb = 0, Kb = 0, P = 0, Ks = 0;
  bool decode = false;
};
RECOPS_STEM_HD int64_t budget_ks(const StemRules& r, int64_t P);
RECOPS_STEM_HD BatchRules batch_rules(const StemRules& r, int64_t Lq, int64_t Lk, int64_t Lp) {
  BatchRules b;
  b.Qb = ceil_div(Lq, r.Bs);
  b.Kb = ceil_div(Lk, r.Bs);
  b.P = ceil_div(Lp, r.Bs);
  b.Ks = budget_ks(r, b.P);
  b.decode = Lq == 1 && Lp >= Lk;
  return b;
}

// Step 2: visible key blocks V of query block i (0 for padding rows i >= Qb).
RECOPS_STEM_HD int64_t visible_blocks(const StemRules& r, const BatchRules& b, int64_t i) {
  if (i >= b.Qb) return 0;
  if (!r.causal || b.decode) return b.Kb;
  const int64_t v = b.Kb - b.Qb + i + 1;
  return v < 0 ? 0 : (v > b.Kb ? b.Kb : v);
}
RECOPS_STEM_HD int64_t visible_blocks(const StemRules& r, int64_t Lq, int64_t Lk, int64_t Lp,
                                      int64_t i) {
  return visible_blocks(r, batch_rules(r, Lq, Lk, Lp), i);
}

// Step 3: the forced set F = [0, s_end) ∪ [w_begin, V); |F| without double counting.
struct Forced {
  int64_t s_end = 0, w_begin = 0, count = 0;
};
RECOPS_STEM_HD Forced forced_set(const StemRules& r, int64_t V) {
  Forced f;
  f.s_end = r.initial_blocks < V ? r.initial_blocks : V;
  f.w_begin = V - r.window_size > 0 ? V - r.window_size : 0;
  if (f.w_begin < f.s_end) f.w_begin = f.s_end;  // the union: the window's overlap is the sink's
  f.count = f.s_end + (V - f.w_begin);
  return f;
}
RECOPS_STEM_HD bool is_forced(const Forced& f, int64_t j) {
  return j < f.s_end || j >= f.w_begin;
}

// Step 6, first line: Ks of the prompt's block count P.
RECOPS_STEM_HD int64_t budget_ks(const StemRules& r, int64_t P) {
  if (P < kTierMedium) return P;
  const bool large = P >= kTierLarge;
  const float prod = f32_mul(static_cast<float>(P), large ? r.rate_large : r.rate_medium);
  return static_cast<int64_t>(floorf(prod)) + (large ? r.bias_large : r.bias_medium);
}

// Step 6: K̂ of query block i, given the candidate count |C|.
RECOPS_STEM_HD int64_t budget_k(const StemRules& r, const BatchRules& b, int64_t i,
                                int64_t num_candidates) {
  const int64_t Ks = b.Ks;
  const int64_t p = i + b.Kb - b.Qb, delta = b.P - Ks;
  int64_t K = Ks;
  if (!(p < Ks || delta <= 1)) {
    const float t = f32_div(static_cast<float>(p - Ks), static_cast<float>(delta - 1));
    const float ksf = static_cast<float>(Ks);
    const float ke = f32_mul(ksf, r.alpha);
    const float d = f32_sub(ke, ksf);
    const int64_t k = static_cast<int64_t>(floorf(f32_fma(t, d, ksf)));
    // min(max(k, 1), Ks) in this order: Ks = 0 (a rate and a bias of 0) gives 0, not 1.
    K = k < 1 ? 1 : k;
    if (K > Ks) K = Ks;
  }
  if (K < 0) K = 0;
  if (K > kBudgetCap) K = kBudgetCap;
  if (K > num_candidates) K = num_candidates;
  return K;
}
RECOPS_STEM_HD int64_t budget_k(const StemRules& r, int64_t Lq, int64_t Lk, int64_t Lp, int64_t i,
                                int64_t num_candidates) {
  return budget_k(r, batch_rules(r, Lq, Lk, Lp), i, num_candidates);
}

// The bits of an fp32 value and back (host and device): x reread as To, one of float and
// uint32_t, From the other.
template <class To, class From>
RECOPS_STEM_HD To reread32(From x) {
  static_assert(sizeof(To) == 4 && sizeof(From) == 4);
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<To, uint32_t>)
    return __float_as_uint(x);
  else
    return __uint_as_float(x);
#else
  To y;
  std::memcpy(&y, &x, 4);
  return y;
#endif
}
RECOPS_STEM_HD uint32_t f32_bits(float x) {
  return reread32<uint32_t>(x);
}
RECOPS_STEM_HD float bits_f32(uint32_t u) {
  return reread32<float>(u);
}

// fp32 -> bf16 -> fp32, round to nearest even (NaN is mapped before this is called).
RECOPS_STEM_HD float round_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7f800000u) != 0x7f800000u) u += 0x7fffu + ((u >> 16) & 1u);
  return bits_f32(u & 0xffff0000u);
}

// Step 5: the rank key κ of a score as an unsigned integer whose order is κ's order (NaN as -inf,
// -0 as +0); precision 2 ranks the bf16 rounding.
RECOPS_STEM_HD uint32_t rank_key(float s, int precision) {
  if (s != s) s = -INFINITY;
  if (s == 0.0f) s = 0.0f;
  if (precision == 2) s = round_bf16(s);
  const uint32_t u = f32_bits(s);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// rank_key(s, P) in fewer instructions (the Hopper scoring epilogue, cuda/score_sm90.cu): -0
// becomes +0 by adding +0 (which changes no other value), bf16 rounding leaves NaN as it is, the
// sign-dependent bit map is one xor, and NaN ranks as -inf (key 0x007fffff) at the end. Equal to
// rank_key for every input (tests/cpp/test_stem.cpp).
template <int P>
RECOPS_STEM_HD uint32_t rank_key_short(float s) {
#if defined(__CUDA_ARCH__)
  s = __fadd_rn(s, 0.0f);
#else
  s = s + 0.0f;
#endif
  if constexpr (P == 2) s = round_bf16(s);
  const uint32_t u = f32_bits(s);
  const uint32_t k = u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) | 0x80000000u);
  return s != s ? 0x007fffffu : k;
}

// The §3.2 total order in one integer: a larger value wins (larger κ, then lower j).
RECOPS_STEM_HD uint64_t order_key(uint32_t key, int64_t j) {
  return (static_cast<uint64_t>(key) << 32) |
         static_cast<uint64_t>(0xffffffffu - static_cast<uint32_t>(j));
}

}  // namespace recops::ops::stem
