// training/common/gdn_entry.h: the argument checks that the GDN sub-ops' entries share
// (chunk_scaled_dot_kkt, solve_tril, recompute_w_u_fwd, chunk_fwd_o, chunk_bwd_dv_local,
// chunk_gated_delta_rule_fwd_h, chunk_gated_delta_rule_bwd_dhu, chunk_bwd_dqkwg,
// prepare_wy_repr_bwd) and the composed chunk_gated_delta_rule(_bwd)'s entry: the floating
// dtypes, an input or output tensor against its layout, the seq_offsets values and the varlen chunk
// count. Each message names the op, the argument and the rule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/runtime.h"
#include "core/offsets.h"
#include "ops/training/common/packed_offsets.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::training {

inline bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// The checks of one op's entry; `anchor` names the tensor whose device every other one must share
// ("q" or "k").
struct GdnEntry {
  const char* op;
  const char* anchor;

  // The anchor itself: 4-D floating and contiguous (`letters`, e.g. "[B, T, H, K]").
  Status lead(const TensorView& t, const char* letters) const {
    RECOPS_CHECK(t.ndim == 4 && is_float(t.dtype), op, ": ", anchor, " must be ", letters,
                 " of fp64, fp32, fp16 or bf16; got ", describe(t));
    RECOPS_CHECK(t.is_contiguous(), op, ": ", anchor, " must be contiguous; got ", describe(t));
    return Status::Ok();
  }

  // `name`: floating (of `dtype`, the anchor's, when given), contiguous, on the anchor's device,
  // of sizes `want` (-1: any).
  Status check_tensor(const char* name, const TensorView& t, const TensorView& a, const Shape& want,
                      const char* letters, std::optional<DType> dtype = std::nullopt) const {
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, anchor, a, name, t));
    bool ok = t.ndim == static_cast<int64_t>(want.size()) && is_float(t.dtype);
    for (size_t d = 0; ok && d < want.size(); ++d) ok = want[d] < 0 || t.sizes[d] == want[d];
    RECOPS_CHECK(ok, op, ": ", name, " must be ", letters, " of fp64, fp32, fp16 or bf16 with ",
                 shape_str(want), " (-1: any); got ", describe(t));
    if (dtype)
      RECOPS_CHECK(t.dtype == *dtype, op, ": ", name, " must have ", anchor, "'s dtype ",
                   dtype_name(*dtype), "; got ", describe(t));
    RECOPS_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous; got ", describe(t));
    return Status::Ok();
  }

  // `name` as check_tensor, refused in two steps: the rank and dtype against `layout` (e.g.
  // "[B, T, HV, V]"), then the sizes as "`layout` = [the sizes wanted] (`rule`)".
  Status check_sized(const char* name, const char* layout, const TensorView& t, const TensorView& a,
                     const Shape& want, const char* rule) const {
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, anchor, a, name, t));
    RECOPS_CHECK(t.ndim == static_cast<int>(want.size()) && is_float(t.dtype), op, ": ", name,
                 " must be ", layout, " of fp64, fp32, fp16 or bf16; got ", describe(t));
    Shape shown = want;
    bool ok = true;
    for (size_t i = 0; i < want.size(); ++i) {
      if (want[i] < 0) shown[i] = t.sizes[i];
      ok = ok && t.sizes[i] == shown[i];
    }
    RECOPS_CHECK(ok, op, ": ", name, " must be ", layout, " = ", shape_str(shown), " (", rule,
                 "); got ", describe(t));
    RECOPS_CHECK(t.is_contiguous(), op, ": ", name, " must be contiguous; got ", describe(t));
    return Status::Ok();
  }

  // An output: contiguous, of exactly `want` and `dtype`, on the anchor's device; `rule` stands
  // between the sizes and the dtype's name (e.g. "([B, T, HV, V]) of q's dtype").
  Status check_out(const char* name, const TensorView& t, const TensorView& a, const Shape& want,
                   DType dtype, const char* rule) const {
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, anchor, a, name, t));
    RECOPS_CHECK(t.shape() == want && t.dtype == dtype && t.is_contiguous(), op, ": ", name,
                 " must be contiguous ", shape_str(want), " ", rule, " ", dtype_name(dtype),
                 "; got ", describe(t));
    return Status::Ok();
  }

  // GVA: `v_name`'s HV value heads are a multiple of the anchor's H key heads.
  Status gva(const char* v_name, int64_t HV, int64_t H) const {
    RECOPS_CHECK(H > 0 ? HV % H == 0 : HV == 0, op, ": ", v_name, "'s HV=", HV,
                 " must be a multiple of ", anchor, "'s H=", H,
                 " (GVA: value head hv uses key head hv / (HV/H))");
    return Status::Ok();
  }

  // The optional seq_offsets against the anchor t (batch B, time T; check_packed_offsets): with
  // them *n_seq gets the sequence count and p->seq_offsets, p->off_dtype the offsets.
  template <class Offsets, class P>
  Status seq_offsets(const Offsets& off, const TensorView& t, int64_t B, int64_t T,
                     const Context* ctx, int64_t* n_seq, P* p) const {
    if (!off) return Status::Ok();
    const std::string rule = std::string("T (") + anchor + "'s dim 1)";
    RECOPS_RETURN_IF_ERROR(
        check_packed_offsets(op, anchor, t, *off, B, T, rule.c_str(), ctx, n_seq));
    p->seq_offsets = off->data;
    p->off_dtype = off->dtype;
    return Status::Ok();
  }

  // chunk_size (BT): 16, 32 or 64.
  Status chunk_size(int64_t bt) const {
    RECOPS_CHECK(bt == 16 || bt == 32 || bt == 64, op, ": chunk_size=", bt,
                 " must be 16, 32 or 64");
    return Status::Ok();
  }

  // `nt` (named `nt_name`, e.g. "h's NT") is at least Σ ceil(len_n / bt), the chunk count of the
  // n_seq validated sequences. Host offsets are read directly; device offsets only when
  // validate_enabled() and ctx's stream is not capturing (one small copy and a sync, as the
  // offsets' own validation does); otherwise nothing is checked and the kernels leave the chunks
  // numbered past nt alone.
  Status chunk_count(const TensorView& offsets, int64_t n_seq, int64_t bt, int64_t nt,
                     const char* nt_name, const Context& ctx) const {
    std::vector<int64_t> copy;
    const void* values = offsets.data;
    if (!offsets.device.is_cpu()) {
      if (!validate_enabled() || core::cuda::stream_capturing(ctx.stream)) return Status::Ok();
      copy.resize(static_cast<size_t>(n_seq + 1));
      RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(
          copy.data(), offsets.data, dtype_size(offsets.dtype), n_seq + 1, offsets.strides[0],
          offsets.device.index, ctx.stream));
      values = copy.data();  // packed at the offsets' own element size
    }
    auto at = [&](int64_t n) -> int64_t {
      return offsets.dtype == DType::int32 ? static_cast<const int32_t*>(values)[n]
                                           : static_cast<const int64_t*>(values)[n];
    };
    int64_t chunks = 0;
    for (int64_t n = 0; n < n_seq; ++n) chunks += (at(n + 1) - at(n) + bt - 1) / bt;
    RECOPS_CHECK(nt >= chunks, op, ": ", nt_name, "=", nt,
                 " is less than the chunk count of the sequences, ", chunks,
                 " (Σ ceil(len_n / chunk_size))");
    return Status::Ok();
  }
};

}  // namespace recops::ops::training
