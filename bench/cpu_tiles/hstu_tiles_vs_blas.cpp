// bench/cpu_tiles/hstu_tiles_vs_blas.cpp: the HSTU CPU forward's tile products (our register-
// blocked microkernels from src/ops/hstu/hstu_attn/cpu/fwd_kernel.h, built at 16 lanes with the
// AVX512-BF16 dot products) against OpenBLAS's cblas_sgemm on the same tiles, one thread, to back
// the choice written in src/ops/hstu/hstu_attn/README.md ("Why no BLAS call in the tiles").
//
// Tiles of the forward at d = dv = 128: S = Q Kᵀ is [128 x 64] over d, O += P V is [128 x 128]
// over 64 keys. Each product is timed as the median of 15 batches of 400 calls; the two results
// are compared (max |ours - BLAS|) so a fast wrong kernel cannot win. Output: one JSON object.
// Build and run: bench/cpu_tiles/run.sh (needs libopenblas-dev; not part of the build).
#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define RECOPS_HSTU_VW 16
#define RECOPS_HSTU_BF16DP 1
#include "ops/hstu/hstu_attn/cpu/fwd_kernel.h"

namespace {

// The tile products and sizes of fwd_kernel.h (accumulate_pv, scores, pv_bf16, scores_bf16,
// kBq, kBk).
using namespace recops::ops;  // NOLINT(build/namespaces): a benchmark of that namespace's tiles

template <class F>
double median_call_us(F&& f) {
  std::vector<double> t;
  for (int rep = 0; rep < 15; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 400; ++i) f();
    t.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
        400);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

uint16_t bf16_bits(float x) {  // round to nearest even
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

double max_diff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

}  // namespace

int main() {
  openblas_set_num_threads(1);
  const int64_t d = 128, dv = 128;
  uint32_t state = 12345;
  auto rnd = [&] {
    state = state * 1664525u + 1013904223u;
    return from_bf16(bf16_bits(static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f));
  };
  // Values are bf16-representable, so the fp32 and bf16 paths multiply the same numbers.
  std::vector<float> q(kBq * d), kt(d * kBk), pm(kBq * kBk), vt(kBk * dv);
  for (auto* v : {&q, &kt, &pm, &vt})
    for (float& x : *v) x = rnd();
  std::vector<float> s_ours(kBq * kBk), s_blas(kBq * kBk), o_ours(kBq * dv), o_blas(kBq * dv);

  // fp32 S = Q Kᵀ (kt is K transposed, [d][kBk]).
  const double s_us =
      median_call_us([&] { scores(q.data(), d, kt.data(), s_ours.data(), kBq, d); });
  const double s_blas_us = median_call_us([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBq, kBk, d, 1.0f, q.data(), d,
                kt.data(), kBk, 0.0f, s_blas.data(), kBk);
  });
  const double s_err = max_diff(s_ours.data(), s_blas.data(), kBq * kBk);

  // fp32 O += P V (one call from zero for the comparison, then timed accumulating).
  std::fill(o_ours.begin(), o_ours.end(), 0.0f);
  std::fill(o_blas.begin(), o_blas.end(), 0.0f);
  accumulate_pv(pm.data(), kBk, vt.data(), o_ours.data(), kBq, kBk, dv);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBq, dv, kBk, 1.0f, pm.data(), kBk,
              vt.data(), dv, 1.0f, o_blas.data(), dv);
  const double pv_err = max_diff(o_ours.data(), o_blas.data(), kBq * dv);
  const double pv_us = median_call_us(
      [&] { accumulate_pv(pm.data(), kBk, vt.data(), o_ours.data(), kBq, kBk, dv); });
  const double pv_blas_us = median_call_us([&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBq, dv, kBk, 1.0f, pm.data(), kBk,
                vt.data(), dv, 1.0f, o_blas.data(), dv);
  });

  // bf16 pairs: qp[r][x/2], kp[x/2][c][2], pp[r][c/2], vp[c/2][y][2] (the forward's packing).
  const int64_t dh = d / 2;
  std::vector<uint32_t> qp(kBq * dh), pp(kBq * kBk / 2);
  std::vector<uint16_t> kp(dh * kBk * 2), vp(kBk / 2 * dv * 2);
  for (int64_t r = 0; r < kBq; ++r)
    for (int64_t x = 0; x < dh; ++x)
      qp[r * dh + x] =
          bf16_bits(q[r * d + 2 * x]) | (uint32_t{bf16_bits(q[r * d + 2 * x + 1])} << 16);
  for (int64_t x = 0; x < dh; ++x)
    for (int64_t c = 0; c < kBk; ++c)
      for (int j = 0; j < 2; ++j) kp[(x * kBk + c) * 2 + j] = bf16_bits(kt[(2 * x + j) * kBk + c]);
  for (int64_t r = 0; r < kBq; ++r)
    for (int64_t c = 0; c < kBk / 2; ++c)
      pp[r * (kBk / 2) + c] =
          bf16_bits(pm[r * kBk + 2 * c]) | (uint32_t{bf16_bits(pm[r * kBk + 2 * c + 1])} << 16);
  for (int64_t c = 0; c < kBk / 2; ++c)
    for (int64_t y = 0; y < dv; ++y)
      for (int j = 0; j < 2; ++j) vp[(c * dv + y) * 2 + j] = bf16_bits(vt[(2 * c + j) * dv + y]);
  std::vector<float> s_bf(kBq * kBk), o_bf(kBq * dv, 0.0f);
  const double sbf_us =
      median_call_us([&] { scores_bf16(qp.data(), dh, kp.data(), s_bf.data(), kBq); });
  const double sbf_err = max_diff(s_bf.data(), s_blas.data(), kBq * kBk);
  pv_bf16(pp.data(), vp.data(), o_bf.data(), kBq, kBk, dv);
  std::vector<float> o_ref(kBq * dv, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kBq, dv, kBk, 1.0f, pm.data(), kBk,
              vt.data(), dv, 1.0f, o_ref.data(), dv);
  const double pvbf_err = max_diff(o_bf.data(), o_ref.data(), kBq * dv);
  const double pvbf_us =
      median_call_us([&] { pv_bf16(pp.data(), vp.data(), o_bf.data(), kBq, kBk, dv); });

  const double s_gf = 2.0 * kBq * kBk * d / 1e3, pv_gf = 2.0 * kBq * kBk * dv / 1e3;  // MFLOP
  std::printf(
      "{\"what\": \"HSTU CPU forward tile products, one thread, d=dv=%lld, tile %lldx%lld\",\n"
      " \"blas\": \"%s\",\n"
      " \"qk_fp32\": {\"ours_us\": %.3f, \"ours_gflops\": %.1f, \"sgemm_us\": %.3f, "
      "\"sgemm_gflops\": %.1f, \"max_abs_diff\": %.3g},\n"
      " \"pv_fp32\": {\"ours_us\": %.3f, \"ours_gflops\": %.1f, \"sgemm_us\": %.3f, "
      "\"sgemm_gflops\": %.1f, \"max_abs_diff\": %.3g},\n"
      " \"qk_bf16_dp\": {\"ours_us\": %.3f, \"ours_gflops\": %.1f, \"max_abs_diff_vs_sgemm\": "
      "%.3g},\n"
      " \"pv_bf16_dp\": {\"ours_us\": %.3f, \"ours_gflops\": %.1f, \"max_abs_diff_vs_sgemm\": "
      "%.3g}}\n",
      static_cast<long long>(d), static_cast<long long>(kBq), static_cast<long long>(kBk),
      openblas_get_config(), s_us, s_gf / s_us, s_blas_us, s_gf / s_blas_us, s_err, pv_us,
      pv_gf / pv_us, pv_blas_us, pv_gf / pv_blas_us, pv_err, sbf_us, s_gf / sbf_us, sbf_err,
      pvbf_us, pv_gf / pvbf_us, pvbf_err);
  return s_err < 1e-3 && pv_err < 1e-3 && sbf_err < 1e-3 && pvbf_err < 1e-3 ? 0 : 1;
}
