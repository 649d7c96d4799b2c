// tests/fuzz/fuzz_gdn_util.h: what the Gated DeltaNet and KDA op fuzzers (fuzz_gdn_entries,
// fuzz_kda_entries) share: the dimensions of one call (B, T, heads, widths, chunk size,
// seq_offsets, chunk count) and the [B, T, heads, width] tensors, gates and scalars built from the
// fuzz input. Moved out of fuzz_gdn_entries.cpp unchanged, so that its inputs decode as before.
#pragma once

#include <optional>

#include "fuzz_util.h"

namespace recops_fuzz {

// The dimensions of one GDN call. N is the sequence count (B, or len(seq_offsets) - 1).
struct Dims {
  int64_t B = 0, T = 0, H = 0, HV = 0, K = 0, V = 0, BT = 64, N = 0, NT = 0;
  DType t = DType::fp32;
  std::optional<TensorView> seq_offsets;
};

inline bool dims(FuzzedDataProvider& fdp, Arena& ar, Dims* d) {
  d->t = train_dtype(fdp);
  const bool packed = fdp.ConsumeIntegralInRange<int>(0, 2) == 0;
  d->B = packed && fdp.ConsumeIntegralInRange<int>(0, 7) ? 1 : extent(fdp, 3);
  d->H = extent(fdp, 3);
  d->HV = fdp.ConsumeIntegralInRange<int>(0, 7)
              ? TensorView::mul_sat(d->H, fdp.ConsumeIntegralInRange<int64_t>(1, 3))
              : extent(fdp, 6);
  d->K = extent(fdp, 20);
  d->V = extent(fdp, 20);
  static constexpr int64_t kBT[] = {16, 32, 64};
  d->BT = fdp.ConsumeIntegralInRange<int>(0, 9) ? kBT[fdp.ConsumeIntegralInRange<int>(0, 2)]
                                                : size_arg(fdp, 1, 128);
  const int64_t bt = d->BT > 0 && d->BT <= 128 ? d->BT : 64;
  if (packed) {
    const int64_t n = fdp.ConsumeIntegralInRange<int64_t>(0, 5);
    TensorView off;
    int64_t total = 0, longest = 0;
    const DType it = dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64, 16);
    if (!ar.offsets(n, it, 90, &off, &total, &longest)) return false;
    d->seq_offsets = off;
    d->N = n;
    d->T = fdp.ConsumeIntegralInRange<int>(0, 7) ? total : extent(fdp, 200);
    // NT: the exact chunk count, the sync-free bound, or anything.
    int64_t exact = 0;
    if (off.dtype == DType::int32 || off.dtype == DType::int64) {
      for (int64_t i = 0; i < n; ++i) {
        auto at = [&](int64_t j) {
          const int64_t o = j * off.strides[off.ndim - 1];
          return off.dtype == DType::int64 ? off.ptr<int64_t>()[o] : off.ptr<int32_t>()[o];
        };
        int64_t len = 0;  // raw offsets may be anything
        if (!__builtin_sub_overflow(at(i + 1), at(i), &len) && len > 0 && len < (int64_t{1} << 40))
          exact += (len + bt - 1) / bt;
      }
    }
    switch (fdp.ConsumeIntegralInRange<int>(0, 3)) {
      case 0: d->NT = exact; break;
      case 1: d->NT = d->T < (int64_t{1} << 40) ? (d->T + bt - 1) / bt + n : d->T; break;
      case 2: d->NT = extent(fdp, 12); break;
      default: d->NT = exact + fdp.ConsumeIntegralInRange<int64_t>(-1, 2); break;
    }
  } else {
    d->T = extent(fdp, 150);
    d->N = d->B;
    d->NT = fdp.ConsumeIntegralInRange<int>(0, 7) && d->T >= 0 && d->T < (int64_t{1} << 40)
                ? (d->T + bt - 1) / bt
                : extent(fdp, 8);
  }
  return true;
}

// A [B, T, heads, width] tensor (width < 0: [B, T, heads]) in dtype t, or another dtype rarely.
inline bool btx(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, int64_t heads, int64_t width,
                DType t, TensorView* out) {
  Shape s = {d.B, d.T, heads};
  if (width >= 0) s.push_back(width);
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) s.pop_back();  // a wrong rank
  return ar.view(s, dtype_or_any(fdp, t, 12), out);
}

// G [B, T, HV] fp32 with values mostly <= 0 (a real decay cumsum), sometimes raw bytes.
inline bool gate(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, TensorView* out) {
  if (!btx(fdp, ar, d, d.HV, -1, DType::fp32, out)) return false;
  if (out->dtype != DType::fp32 || fdp.ConsumeIntegralInRange<int>(0, 5) == 0) return true;
  const int64_t n = out->numel();
  if (out->ndim != 3 || n == 0) return true;
  float* p = static_cast<float*>(out->data);
  for (int64_t b = 0; b < out->sizes[0]; ++b)
    for (int64_t t = 0; t < out->sizes[1]; ++t)
      for (int64_t h = 0; h < out->sizes[2]; ++h)
        p[b * out->strides[0] + t * out->strides[1] + h * out->strides[2]] =
            -0.1f * static_cast<float>(fdp.ConsumeIntegralInRange<int>(0, 200));
  return true;
}

// An optional G, half the time; false when its tensor would be too large.
inline bool maybe_gate(FuzzedDataProvider& fdp, Arena& ar, const Dims& d,
                       std::optional<TensorView>* g) {
  if (!fdp.ConsumeBool()) return true;
  TensorView t;
  if (!gate(fdp, ar, d, &t)) return false;
  *g = t;
  return true;
}

// The per-channel G [B, T, HV, K] of the KDA ops (fp32 usually): within each row of channels a
// decay cumsum (values <= 0, falling along t), sometimes raw bytes.
inline bool channel_gate(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, TensorView* out) {
  if (!btx(fdp, ar, d, d.HV, d.K, DType::fp32, out)) return false;
  if (out->dtype != DType::fp32 || out->ndim != 4 || out->numel() == 0) return true;
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) return true;
  float* p = static_cast<float*>(out->data);
  const int64_t* st = out->strides;
  for (int64_t b = 0; b < out->sizes[0]; ++b)
    for (int64_t h = 0; h < out->sizes[2]; ++h)
      for (int64_t c = 0; c < out->sizes[3]; ++c) {
        float acc = 0.f;
        for (int64_t t = 0; t < out->sizes[1]; ++t) {
          acc -= 0.05f * static_cast<float>(fdp.ConsumeIntegralInRange<int>(0, 40));
          p[b * st[0] + t * st[1] + h * st[2] + c * st[3]] = acc;
        }
      }
  return true;
}

inline std::optional<TensorView> opt(FuzzedDataProvider& fdp, Arena& ar, const Shape& s, DType t,
                                     bool* ok, int odds = 2) {
  if (fdp.ConsumeIntegralInRange<int>(0, odds - 1)) return std::nullopt;
  TensorView v;
  if (!ar.view(s, dtype_or_any(fdp, t, 12), &v)) *ok = false;
  return v;
}

inline std::optional<double> scale_arg(FuzzedDataProvider& fdp) {
  if (fdp.ConsumeBool()) return std::nullopt;
  return real_arg(fdp, 0.125);
}

inline recops::Context ctx_arg(FuzzedDataProvider& fdp) {
  recops::Context ctx;
  ctx.impl = impl_arg(fdp, {"reference", "cpu_generic"});
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  return ctx;
}

// Plain baseline one time in eight, else the entry with a context.
inline bool plain(FuzzedDataProvider& fdp) {
  return fdp.ConsumeIntegralInRange<int>(0, 7) == 0;
}

// chunk_size of a KDA call: BT mostly, sometimes any size (the ops take 32/64 and 16/32/64).
inline int64_t kda_chunk(FuzzedDataProvider& fdp, const Dims& d) {
  return fdp.ConsumeIntegralInRange<int>(0, 7) ? d.BT : size_arg(fdp, 1, 128);
}

// The workspace a composed call asks for (need), sometimes one byte short or none; false when it
// is beyond the harness's memory.
inline bool workspace(FuzzedDataProvider& fdp, size_t need, std::vector<uint8_t>* ws,
                      recops::Context* ctx) {
  size_t give = need;
  const int w = fdp.ConsumeIntegralInRange<int>(0, 7);
  if (w == 0) give = 0;
  if (w == 1 && need > 0) give = need - 1;
  if (give > (size_t{1} << 26)) return false;
  ws->assign(give, 0);
  ctx->workspace = give ? ws->data() : nullptr;
  ctx->workspace_bytes = give;
  return true;
}

}  // namespace recops_fuzz
