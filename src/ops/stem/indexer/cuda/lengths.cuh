// stem_indexer/cuda/lengths.cuh: what the CUDA kernels (the selection in stem_indexer.cu and the
// Hopper scoring GEMM in score_sm90.cu) read alike: the length tensors, and the sizes, vbias and
// rules of the scores.
#pragma once

#include <climits>
#include <cstdint>

#include "ops/stem/indexer/params.h"

namespace recops::ops::stem_cuda {

// q_seq_lens, kv_seq_lens and num_prompt_tokens (nullptr: Lp = Lk) on the device, int32 with
// element strides.
struct DeviceLens {
  const int32_t* q;
  const int32_t* kv;
  const int32_t* prompt;
  int64_t q_stride, kv_stride, prompt_stride;
};

inline DeviceLens device_lens(const StemIndexerParams& p) {
  return {p.q_lens,        p.kv_lens,        p.prompt_lens,
          p.q_lens_stride, p.kv_lens_stride, p.prompt_lens_stride};
}

struct Lengths {
  int64_t q, k, p;
};

// Batch b's lengths in tokens, read on the device and clamped to the tensors' extents
// (q_cap = Qmax·Bs, k_cap = Kmax·Bs), so that unvalidated values never address memory outside
// them: Lq, Lk and Lp (Lk when there are no prompt lengths).
__device__ __forceinline__ Lengths batch_lengths(const DeviceLens& l, int64_t b, int64_t q_cap,
                                                 int64_t k_cap) {
  auto clamp = [](int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : (x > hi ? hi : x); };
  Lengths r;
  r.q = clamp(l.q[b * l.q_stride], 0, q_cap);
  r.k = clamp(l.kv[b * l.kv_stride], 0, k_cap);
  r.p = l.prompt == nullptr ? r.k : clamp(l.prompt[b * l.prompt_stride], 0, INT32_MAX);
  return r;
}

// The kernel arguments both kernels share: vbias [B, Nk, Kmax] (element strides), the lengths,
// the sizes, 1/R², the ranking precision and the rules.
struct ScoreCommon {
  const float* vbias;
  int64_t vs0, vs1, vs2;
  DeviceLens lens;
  int64_t B, Nq, Nk, G, Qmax, Kmax, Df;
  float inv_r2;
  int precision;
  stem::StemRules rules;
};

inline void set_score_common(const StemIndexerParams& p, ScoreCommon* a) {
  a->vbias = p.vbias;
  a->vs0 = p.v_stride[0];
  a->vs1 = p.v_stride[1];
  a->vs2 = p.v_stride[2];
  a->lens = device_lens(p);
  a->B = p.B;
  a->Nq = p.Nq;
  a->Nk = p.Nk;
  a->G = p.G;
  a->Qmax = p.Qmax;
  a->Kmax = p.Kmax;
  a->Df = p.Df;
  a->inv_r2 = 1.0f / static_cast<float>(p.R * p.R);
  a->precision = p.precision;
  a->rules = p.rules;
}

}  // namespace recops::ops::stem_cuda
