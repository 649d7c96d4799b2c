// stem_indexer/stem_common.h: entry helpers shared by the Stem family (stem_prepare,
// stem_indexer, stem_indexer_metadata, block_sparse_attention): argument checks whose messages
// follow spec §10 ("recops.<op>: <argument> ..."), and host reads of int32 vectors.
//
// Type errors (spec E1-E3, E19 dtype mix) say "must have dtype"; the torch binding raises
// TypeError for them, ValueError for the other invalid_argument reasons.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cuda/runtime.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::ops::stem {

inline Status check_dtype(const std::string& op, const char* arg, const TensorView& t, DType want,
                          const char* want_name) {
  RECOPS_CHECK_TYPE(t.dtype == want, "recops.", op, ": ", arg, " must have dtype ", want_name,
                    ", got ", dtype_name(t.dtype));
  return Status::Ok();
}

inline Status check_rank(const std::string& op, const char* arg, const TensorView& t, int rank,
                         const char* layout) {
  RECOPS_CHECK(t.ndim == rank, "recops.", op, ": ", arg, " must be ", rank, "-D ", layout,
               ", got rank ", t.ndim, " (shape ", shape_str(t.shape()), ")");
  return Status::Ok();
}

inline Status check_device(const std::string& op, const char* a_name, const TensorView& a,
                           const char* b_name, const TensorView& b) {
  RECOPS_CHECK(a.device == b.device, "recops.", op, ": every tensor must be on one device; ",
               a_name, " is on ", a.device.str(), ", ", b_name, " on ", b.device.str());
  return Status::Ok();
}

// True when this call reads tensor contents on the host (CPU always; CUDA when value checks are
// on and the stream is not capturing).
inline bool value_checks_on(const TensorView& t, const Context& ctx) {
  if (t.device.is_cpu()) return true;
  return validate_enabled() && !core::cuda::stream_capturing(ctx.stream);
}

// The int32 elements of a 1-D (or flattened contiguous) tensor, as int64 on the host.
inline Status read_int32(const TensorView& t, std::vector<int64_t>* out, const Context& ctx,
                         std::vector<int32_t>* raw = nullptr) {
  const int64_t n = t.numel();
  const int64_t stride = t.ndim == 1 ? t.strides[0] : 1;
  std::vector<int32_t> tmp(static_cast<size_t>(n));
  if (n > 0) {
    if (t.device.is_cpu()) {
      const auto* p = static_cast<const int32_t*>(t.data);
      for (int64_t i = 0; i < n; ++i) tmp[static_cast<size_t>(i)] = p[i * stride];
    } else {
      RECOPS_RETURN_IF_ERROR(core::cuda::copy_strided_to_host(tmp.data(), t.data, 4, n, stride,
                                                              t.device.index, ctx.stream));
    }
  }
  out->assign(tmp.begin(), tmp.end());
  if (raw) *raw = std::move(tmp);
  return Status::Ok();
}

// ---- for the ops' argument tables (the kit's shape functions) ----
// The torch binding copies a tensor whose layout the entry refuses (all of it, or its last dim)
// before a real call, but hands a Meta call its tensors as given; the shape function of a Meta
// call sees them through these, as the real call will. Data pointers are kept.
inline TensorView dense_layout(const TensorView& t) {
  return TensorView(t.data, t.dtype, t.device, t.shape());
}
inline std::optional<TensorView> dense_layout(const std::optional<TensorView>& t) {
  return t ? std::optional<TensorView>(dense_layout(*t)) : std::nullopt;
}
inline TensorView inner_dense_layout(TensorView t) {
  if (t.ndim > 0 && t.sizes[t.ndim - 1] > 1) t.strides[t.ndim - 1] = 1;
  return t;
}
inline std::optional<TensorView> inner_dense_layout(const std::optional<TensorView>& t) {
  return t ? std::optional<TensorView>(inner_dense_layout(*t)) : std::nullopt;
}
// A tensor with elements but no data: a Meta (shape-only) call, whose contents cannot be read.
inline bool shape_only(const TensorView& t) {
  return t.data == nullptr && t.numel() > 0;
}

// The index tensors as the CUDA kernels read them (device pointers and element strides), for
// the ops that take q with cu_seqlens_q and packed (cu_seqlens_kv) or paged (block_table) k/v:
// stem_prepare and block_sparse_attention (their args and params share these names).
template <class Args, class Params>
void set_device_index_tensors(const Args& a, bool paged, Params* p) {
  p->d_cu_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  p->d_cu_q_stride = a.cu_seqlens_q.strides[0];
  p->d_lk = static_cast<const int32_t*>(a.kv_seq_lens.data);
  p->d_lk_stride = a.kv_seq_lens.strides[0];
  if (paged) {
    p->d_table = static_cast<const int32_t*>(a.block_table->data);
  } else {
    p->d_cu_kv = static_cast<const int32_t*>(a.cu_seqlens_kv->data);
    p->d_cu_kv_stride = a.cu_seqlens_kv->strides[0];
  }
}

}  // namespace recops::ops::stem
