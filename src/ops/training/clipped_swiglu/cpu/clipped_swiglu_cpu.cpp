// training/clipped_swiglu/cpu/clipped_swiglu_cpu.cpp: cpu_generic. OpenMP over blocks of rows (at
// least kGrain outputs each). Each row goes in pieces of kBlock outputs: the gate, linear (and dy)
// values are widened into Acc arrays, the math runs as plain branch-free loops over those arrays
// (the compiler vectorises them: selects for the clamps and masks, and for fp32 a polynomial
// exp), then each output is rounded once. Acc: float for fp32 and the 16-bit dtypes, double for
// fp64 (std::exp). The clamps are comparisons, so that a NaN passes through them (torch.clamp);
// the backward's masks are selects, not products.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/parallel.h"
#include "ops/training/clipped_swiglu/impls.h"

// GCC if-converts the clamps and masks (and so vectorises the loops) only when comparisons may
// not trap; the op raises no floating-point exceptions anyway.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif

namespace recops::ops::clipped_swiglu_ns {
namespace {
constexpr int64_t kGrain = int64_t{1} << 14;  // outputs per OpenMP chunk, at least
constexpr int64_t kBlock = 256;               // outputs per piece of a row

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Widening; bf16 by its bits here (the library's to_float is not always inlined, which keeps
// the gather loops from vectorising).
template <class T>
AccOf<T> load(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return v;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    const uint32_t bits = static_cast<uint32_t>(v.bits) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  } else {
    return to_float(v);
  }
}
template <class T>
T store(AccOf<T> v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>)
    return v;
  else
    return from_float<T>(v);
}

// e^x in fp32 (within 2 ulp of expf for x in [-87.5, 88.5]): x = n ln2 + r with n an integer
// (round to nearest by the 1.5·2^23 trick) and |r| <= ln2/2 (ln2 in two parts), Cephes' degree-6
// polynomial for e^r, and 2^n from the exponent bits. x below -87.5 (and NaN) gives e^-87.5 and
// above 88.5 gives +inf: inside σ these change nothing a float can hold (1/(1 + e^-87.5) = 1,
// 1/(1 + inf) = 0); a NaN input of σ reaches the output through g_c, which the callers multiply by.
inline float exp_f32(float x) {
  x = x > -87.5f ? x : -87.5f;
  x = x < 88.5f ? x : 88.5f;
  const float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const uint32_t bits = static_cast<uint32_t>(static_cast<int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}
template <class Acc>
Acc exp_acc(Acc x) {
  if constexpr (std::is_same_v<Acc, float>)
    return exp_f32(x);
  else
    return std::exp(x);
}

// Outputs [i0, i0 + n) of row r (n <= kBlock): the gate of output i at x[i * step], its linear
// part at x[u0 + i * step].
template <class T, bool kBackward>
void piece(const Params& p, int64_t r, int64_t i0, int64_t n) {
  using Acc = AccOf<T>;
  const Acc L = static_cast<Acc>(p.limit), a = static_cast<Acc>(p.alpha),
            b = static_cast<Acc>(p.linear_offset);
  const int64_t I = p.I;
  const int64_t step = p.interleaved ? 2 : 1;
  const int64_t u0 = p.interleaved ? 1 : I;
  const T* x = static_cast<const T*>(p.x) + r * 2 * I;
  Acc g[kBlock], u[kBlock], o1[kBlock], o2[kBlock];
  for (int64_t j = 0; j < n; ++j) {
    g[j] = load(x[(i0 + j) * step]);
    u[j] = load(x[u0 + (i0 + j) * step]);
  }
  if constexpr (!kBackward) {
    for (int64_t j = 0; j < n; ++j) {
      const Acc gc = g[j] > L ? L : g[j];
      const Acc uc = u[j] > L ? L : (u[j] < -L ? -L : u[j]);
      o1[j] = gc / (Acc(1) + exp_acc(-a * gc)) * (uc + b);
    }
    T* y = static_cast<T*>(p.out) + r * I + i0;
    for (int64_t j = 0; j < n; ++j) y[j] = store<T>(o1[j]);
  } else {
    const T* dy = static_cast<const T*>(p.dy) + r * I + i0;
    for (int64_t j = 0; j < n; ++j) o1[j] = load(dy[j]);
    Acc t[kBlock];  // the bracket of d/dg [g σ(αg)] = σ (1 + αg(1 − σ))
    for (int64_t j = 0; j < n; ++j) {
      const Acc gc = g[j] > L ? L : g[j];
      const Acc uc = u[j] > L ? L : (u[j] < -L ? -L : u[j]);
      const Acc s = Acc(1) / (Acc(1) + exp_acc(-a * gc));
      const Acc d = o1[j];
      t[j] = Acc(1) + a * gc * (Acc(1) - s);
      const Acc dg = d * (uc + b) * (s * t[j]);
      const Acc du = d * gc * s;
      o1[j] = g[j] <= L ? dg : Acc(0);
      o2[j] = (u[j] >= -L && u[j] <= L) ? du : Acc(0);
    }
    // The bracket cancels near SiLU's minimum (αg ≈ −1.28), where fp32 keeps only its absolute
    // error: those few elements are recomputed in fp64 (a scalar pass; the loop above vectorises).
    if constexpr (!std::is_same_v<Acc, double>) {
      for (int64_t j = 0; j < n; ++j) {
        if (!(std::fabs(t[j]) < Acc(0.0625)) || !(g[j] <= L)) continue;
        const double gc = g[j], ad = a;
        const double sd = 1.0 / (1.0 + std::exp(-ad * gc));
        const double uc = u[j] > L ? L : (u[j] < -L ? -L : u[j]);
        o1[j] = static_cast<Acc>(double(load(dy[j])) * (uc + double(b)) *
                                 (sd * (1.0 + ad * gc * (1.0 - sd))));
      }
    }
    T* dx = static_cast<T*>(p.out) + r * 2 * I;
    for (int64_t j = 0; j < n; ++j) {
      dx[(i0 + j) * step] = store<T>(o1[j]);
      dx[u0 + (i0 + j) * step] = store<T>(o2[j]);
    }
  }
}

template <class T>
void run_typed(const Params& p, int threads) {
  const int64_t grain = std::max<int64_t>(1, kGrain / p.I);
  core::parallel_for(p.rows, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      for (int64_t i0 = 0; i0 < p.I; i0 += kBlock) {
        const int64_t n = std::min(kBlock, p.I - i0);
        if (p.backward)
          piece<T, true>(p, r, i0, n);
        else
          piece<T, false>(p, r, i0, n);
      }
    }
  });
}
}  // namespace

Status run_cpu(const Params& p, const Context& ctx) {
  if (!visit_floating(p.dtype, [&](auto t) { run_typed<decltype(t)>(p, ctx.num_threads); }))
    return Status(StatusCode::internal, "clipped_swiglu: cpu_generic reached with a bad dtype");
  return Status::Ok();
}

}  // namespace recops::ops::clipped_swiglu_ns
