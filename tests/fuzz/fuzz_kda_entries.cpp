// tests/fuzz/fuzz_kda_entries.cpp: the Kimi Delta Attention ops' public C++ entries on the CPU
// that fuzz_gdn_entries does not drive: the backward sub-ops chunk_kda_bwd_dav and
// chunk_kda_bwd_intra, and the composed chunk_kda and chunk_kda_bwd (with the workspace they ask
// for, one byte short, or none), with B, T, heads (GVA groups, sometimes mismatched), widths,
// chunk sizes, seq_offsets, optional tensors, dtypes and strides derived from the fuzz input (the
// dimensions and tensors of fuzz_gdn_util.h). Each call must return an error Status or run; a
// crash, a hang or a sanitizer report is a finding. Its own target, so that the seeds of
// fuzz_gdn_entries keep their meaning (its op is the input's last byte modulo 13; a new selector
// value would change it). The op here is the input's last byte modulo 4.
#include <algorithm>
#include <vector>

#include "fuzz_gdn_util.h"
#include "ops/training/chunk_kda/chunk_kda.h"
#include "ops/training/chunk_kda_bwd_dav/chunk_kda_bwd_dav.h"
#include "ops/training/chunk_kda_bwd_intra/chunk_kda_bwd_intra.h"

namespace {

using namespace recops_fuzz;
using recops::DType;
using recops::Shape;

// The last extent of an Aqk, dAqk or dAkk [B, T, HV, BT]: the chunk size, sometimes anything
// small (a mismatch).
int64_t score_width(FuzzedDataProvider& fdp, int64_t chunk_size) {
  return fdp.ConsumeIntegralInRange<int>(0, 7) ? chunk_size : extent(fdp, 70);
}

void fuzz_dav(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkKdaBwdDavArgs a;
  a.chunk_size = kda_chunk(fdp, d);
  const int64_t bt = score_width(fdp, a.chunk_size);
  if (!btx(fdp, ar, d, d.HV, d.V, d.t, &a.v_new) || !btx(fdp, ar, d, d.HV, d.V, d.t, &a.d_o) ||
      !btx(fdp, ar, d, d.HV, bt, d.t, &a.Aqk))
    return;
  a.scale = scale_arg(fdp);
  a.seq_offsets = d.seq_offsets;
  Shape sa, sv;
  DType tv;
  if (!recops::chunk_kda_bwd_dav_shape(a, &sa, &sv, &tv).ok()) return;
  recops::ChunkKdaBwdDavOut o;
  if (!ar.output(sa, DType::fp32, &o.dAqk) || !ar.output(sv, tv, &o.dv)) return;
  if (plain(fdp)) {
    (void)recops::chunk_kda_bwd_dav_plain(a, o);
    return;
  }
  (void)recops::chunk_kda_bwd_dav(a, o, ctx_arg(fdp));
}

void fuzz_intra(FuzzedDataProvider& fdp, Arena& ar, const Dims& d) {
  recops::ChunkKdaBwdIntraArgs a;
  a.chunk_size = kda_chunk(fdp, d);
  const int64_t bt = score_width(fdp, a.chunk_size);
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !channel_gate(fdp, ar, d, &a.g) || !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta) ||
      !btx(fdp, ar, d, d.HV, bt, DType::fp32, &a.dAqk) ||
      !btx(fdp, ar, d, d.HV, bt, DType::fp32, &a.dAkk) ||
      !btx(fdp, ar, d, d.H, d.K, DType::fp32, &a.dq) ||
      !btx(fdp, ar, d, d.H, d.K, DType::fp32, &a.dk) ||
      !btx(fdp, ar, d, d.HV, -1, DType::fp32, &a.dbeta) ||
      !btx(fdp, ar, d, d.HV, d.K, DType::fp32, &a.dg))
    return;
  a.seq_offsets = d.seq_offsets;
  a.gate_log2 = fdp.ConsumeBool();
  Shape s[4];
  if (!recops::chunk_kda_bwd_intra_shape(a, s).ok()) return;
  recops::ChunkKdaBwdIntraOut o;
  TensorView* outs[4] = {&o.dq, &o.dk, &o.dbeta, &o.dg};
  for (int i = 0; i < 4; ++i)
    if (!ar.output(s[i], DType::fp32, outs[i])) return;
  if (plain(fdp)) {
    (void)recops::chunk_kda_bwd_intra_plain(a, o);
    return;
  }
  (void)recops::chunk_kda_bwd_intra(a, o, ctx_arg(fdp));
}

// The raw per-channel gate g [B, T, HV, K] of chunk_kda (not a cumsum): small negative values,
// sometimes raw bytes.
bool raw_gate(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, TensorView* out) {
  if (!btx(fdp, ar, d, d.HV, d.K, DType::fp32, out)) return false;
  if (out->dtype != DType::fp32 || out->ndim != 4 || out->numel() == 0) return true;
  if (fdp.ConsumeIntegralInRange<int>(0, 5) == 0) return true;
  float* p = static_cast<float*>(out->data);
  const int64_t* st = out->strides;
  for (int64_t b = 0; b < out->sizes[0]; ++b)
    for (int64_t t = 0; t < out->sizes[1]; ++t)
      for (int64_t h = 0; h < out->sizes[2]; ++h)
        for (int64_t c = 0; c < out->sizes[3]; ++c)
          p[b * st[0] + t * st[1] + h * st[2] + c * st[3]] =
              -0.05f * static_cast<float>(fdp.ConsumeIntegralInRange<int>(0, 40));
  return true;
}

// chunk_kda, or (bwd) chunk_kda_bwd with the same arguments.
void fuzz_composed(FuzzedDataProvider& fdp, Arena& ar, const Dims& d, bool bwd) {
  recops::ChunkKdaArgs a;
  bool ok = true;
  if (!btx(fdp, ar, d, d.H, d.K, d.t, &a.q) || !btx(fdp, ar, d, d.H, d.K, d.t, &a.k) ||
      !btx(fdp, ar, d, d.HV, d.V, d.t, &a.v) || !raw_gate(fdp, ar, d, &a.g) ||
      !btx(fdp, ar, d, d.HV, -1, d.t, &a.beta))
    return;
  a.scale = scale_arg(fdp);
  a.initial_state = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  a.output_final_state = fdp.ConsumeBool();
  a.seq_offsets = d.seq_offsets;
  a.use_qk_l2norm_in_kernel = fdp.ConsumeBool();
  a.chunk_size = kda_chunk(fdp, d);
  if (!ok) return;
  if (!bwd) {
    Shape so, sf;
    DType to;
    if (!recops::chunk_kda_shape(a, &so, &to, &sf).ok()) return;
    TensorView o, fs;
    if (!ar.output(so, to, &o)) return;
    const bool with_fs = a.output_final_state != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0);
    if (with_fs && !ar.output(sf, DType::fp32, &fs)) return;
    if (plain(fdp)) {
      (void)recops::chunk_kda_plain(a, o, with_fs ? &fs : nullptr);
      return;
    }
    recops::Context ctx = ctx_arg(fdp);
    std::vector<uint8_t> ws;
    if (!workspace(fdp, recops::chunk_kda_workspace_bytes(a), &ws, &ctx)) return;
    (void)recops::chunk_kda(a, o, with_fs ? &fs : nullptr, ctx);
    return;
  }
  recops::ChunkKdaBwdArgs b;
  b.q = a.q, b.k = a.k, b.v = a.v, b.g = a.g, b.beta = a.beta, b.scale = a.scale;
  b.initial_state = a.initial_state, b.output_final_state = a.output_final_state;
  b.seq_offsets = a.seq_offsets, b.use_qk_l2norm_in_kernel = a.use_qk_l2norm_in_kernel;
  b.chunk_size = a.chunk_size;
  b.want_d_initial_state = fdp.ConsumeBool();
  if (!ar.view(a.v.shape(), dtype_or_any(fdp, a.v.dtype, 12), &b.grad_o)) return;
  b.grad_final_state = opt(fdp, ar, {d.N, d.HV, d.K, d.V}, DType::fp32, &ok);
  if (!ok) return;
  bool has_dh0 = false;
  if (!recops::chunk_kda_bwd_check(b, &has_dh0).ok()) return;
  recops::ChunkKdaBwdOut out;
  TensorView dh0;
  if (!ar.output(a.q.shape(), a.q.dtype, &out.dq) || !ar.output(a.k.shape(), a.k.dtype, &out.dk) ||
      !ar.output(a.v.shape(), a.v.dtype, &out.dv) || !ar.output(a.g.shape(), a.g.dtype, &out.dg) ||
      !ar.output(a.beta.shape(), a.beta.dtype, &out.dbeta))
    return;
  if (has_dh0 != (fdp.ConsumeIntegralInRange<int>(0, 15) == 0)) {
    if (!ar.output({d.N, d.HV, d.K, d.V}, DType::fp32, &dh0)) return;
    out.dh0 = &dh0;
  }
  if (plain(fdp)) {
    (void)recops::chunk_kda_bwd_plain(b, out);
    return;
  }
  recops::Context ctx = ctx_arg(fdp);
  std::vector<uint8_t> ws;
  if (!workspace(fdp, recops::chunk_kda_bwd_workspace_bytes(b), &ws, &ctx)) return;
  (void)recops::chunk_kda_bwd(b, out, ctx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    const int which = fdp.ConsumeIntegralInRange<int>(0, 3);
    Arena ar(fdp);
    Dims d;
    if (!dims(fdp, ar, &d)) return 0;
    switch (which) {
      case 0: fuzz_dav(fdp, ar, d); break;
      case 1: fuzz_intra(fdp, ar, d); break;
      case 2: fuzz_composed(fdp, ar, d, false); break;
      default: fuzz_composed(fdp, ar, d, true); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
