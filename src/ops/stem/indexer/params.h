// stem_indexer/params.h: the flat problem description shared by the entry, the reference, cpu/
// and cuda/. Raw pointers, element strides, sizes; nothing else.
#pragma once

#include <cstdint>
#include <vector>

#include "ops/stem/common/stem_rules.h"

namespace recops::ops {

struct StemIndexerParams {
  // qflat bf16 [B, Nq, Qmax, Df], kflat bf16 [B, Nk, Kmax, Df] (last stride 1), vbias fp32
  // [B, Nk, Kmax]; strides in elements.
  const uint16_t* qflat = nullptr;
  const uint16_t* kflat = nullptr;
  const float* vbias = nullptr;
  int64_t q_stride[3] = {};  // b, h, i
  int64_t k_stride[3] = {};  // b, h, j
  int64_t v_stride[3] = {};  // b, h, j
  // Lengths in tokens. Host copies (always filled on the CPU; on CUDA when value checks ran) and
  // the device tensors (int32, element stride) for kernels that read them themselves.
  std::vector<int64_t> Lq, Lk, Lp;
  const int32_t* q_lens = nullptr;
  const int32_t* kv_lens = nullptr;
  const int32_t* prompt_lens = nullptr;  // nullptr: Lp = Lk
  int64_t q_lens_stride = 1, kv_lens_stride = 1, prompt_lens_stride = 1;
  // The validated plan (host copy) when metadata was given, else empty.
  std::vector<int32_t> plan;
  // Outputs: sparse_indices int32 [B, Nq, Qmax, Kmax], sparse_seq_len int32 [B, Nq, Qmax],
  // contiguous.
  int32_t* indices = nullptr;
  int32_t* seq_len = nullptr;

  int64_t B = 0, Nq = 0, Nk = 0, G = 1, Qmax = 0, Kmax = 0, Df = 0;
  int64_t R = 8;  // Bs / Ts; scores are divided by R²
  int precision = 1;
  stem::StemRules rules;
  int device_index = 0;
};

struct StemIndexerMetadataParams {
  std::vector<int64_t> Lq, Lk;         // host copies
  std::vector<int32_t> q_raw, kv_raw;  // the int32 values as given (for the fingerprint)
  int64_t B = 0, Nq = 0, Nk = 0;
  bool causal = true;
  int64_t Bs = 128, Df = 2048, window_size = 4;
};

// The metadata words of spec §5 (host computation shared by every backend: bit-identical).
std::vector<int32_t> stem_metadata_words(const StemIndexerMetadataParams& p);
// Work items of a plan: (section s = b·Nk + hk, first query block, end query block), in plan order.
struct StemWorkItem {
  int64_t b, hk, i_begin, i_end;
};
std::vector<StemWorkItem> stem_work_items(const std::vector<int32_t>& plan, int64_t Nk,
                                          const std::vector<int64_t>& Lq, int64_t Bs);

}  // namespace recops::ops
