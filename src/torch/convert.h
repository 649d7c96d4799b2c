// torch/convert.h: the seam between torch and recops. at::Tensor -> recops::TensorView without a
// copy, recops::Status -> a torch error carrying the reason text unchanged, recops::Shape ->
// allocation, and the per-call Context (CPU threads here; the CUDA stream in cuda_context.h).
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <string>
#include <vector>
#include <string_view>

#include "core/memory.h"
#include "recops/context.h"
#include "recops/status.h"
#include "recops/tensor_view.h"

namespace recops::binding {

// torch dtype -> recops dtype; an error naming the op and argument for a dtype recops lacks.
inline DType to_dtype(c10::ScalarType t, std::string_view op, std::string_view arg) {
  switch (t) {
    case c10::ScalarType::Double: return DType::fp64;
    case c10::ScalarType::Float: return DType::fp32;
    case c10::ScalarType::Half: return DType::fp16;
    case c10::ScalarType::BFloat16: return DType::bf16;
    case c10::ScalarType::Float8_e4m3fn: return DType::fp8_e4m3;
    case c10::ScalarType::Int: return DType::int32;
    case c10::ScalarType::Long: return DType::int64;
    case c10::ScalarType::Byte: return DType::uint8;
    case c10::ScalarType::Bool: return DType::boolean;
    default: break;
  }
  TORCH_CHECK(false, op, ": ", arg, " has dtype ", t,
              ", which recops does not support (fp64, fp32, fp16, bf16, float8_e4m3fn, int32, "
              "int64, uint8, bool)");
  return DType::fp32;  // unreachable
}

inline c10::ScalarType to_scalar_type(DType t) {
  switch (t) {
    case DType::fp64: return c10::ScalarType::Double;
    case DType::fp32: return c10::ScalarType::Float;
    case DType::fp16: return c10::ScalarType::Half;
    case DType::bf16: return c10::ScalarType::BFloat16;
    case DType::fp8_e4m3: return c10::ScalarType::Float8_e4m3fn;
    case DType::int32: return c10::ScalarType::Int;
    case DType::int64: return c10::ScalarType::Long;
    case DType::uint8: return c10::ScalarType::Byte;
    case DType::boolean: return c10::ScalarType::Bool;
  }
  return c10::ScalarType::Undefined;
}

// A view of `t` sharing its memory, sizes and strides. Meta tensors become CPU views without data
// (only shape functions see them).
inline TensorView to_view(const at::Tensor& t, std::string_view op, std::string_view arg) {
  TORCH_CHECK(t.defined(), op, ": ", arg, " is an undefined tensor");
  TORCH_CHECK(t.dim() <= kMaxDims, op, ": ", arg, " has ", t.dim(),
              " dims; recops supports at most ", kMaxDims);
  TensorView v;
  v.data = t.is_meta() ? nullptr : t.data_ptr();
  v.dtype = to_dtype(t.scalar_type(), op, arg);
  if (t.is_cuda()) {
    v.device = Device::cuda(t.get_device());
  } else {
    TORCH_CHECK(t.is_cpu() || t.is_meta(), op, ": ", arg, " is on ", t.device(),
                "; recops supports cpu and cuda tensors");
    v.device = Device::cpu();
  }
  v.ndim = static_cast<int>(t.dim());
  for (int i = 0; i < v.ndim; ++i) {
    v.sizes[i] = t.size(i);
    v.strides[i] = t.stride(i);
  }
  return v;
}

// Dims [from, ndim) must be dense for the entries (jagged_ops.md §1.3: last stride 1, other strides
// free). A tensor whose trailing dims are not dense is copied once; any other view passes through.
inline at::Tensor dense_from(const at::Tensor& t, int64_t from) {
  int64_t expect = 1;
  for (int64_t i = t.dim() - 1; i >= from && i >= 0; --i) {
    const int64_t n = t.size(i);
    // Not t.contiguous(): torch calls every empty tensor contiguous and would return it as is.
    if (n != 1 && n != 0 && t.stride(i) != expect)
      return at::empty(t.sizes(), t.options()).copy_(t);
    expect *= n;
  }
  return t;
}

// A failed Status becomes a torch error whose message is the reason, unchanged: the one error
// mapper of every op. not_implemented -> NotImplementedError, type_error -> TypeError, the rest
// RuntimeError, or ValueError for ops whose spec says so (kit::Def::value_errors).
inline void check(const Status& s, bool value_errors = false) {
  if (s.ok()) return;
  if (s.code() == StatusCode::not_implemented) TORCH_CHECK_NOT_IMPLEMENTED(false, s.message());
  if (s.code() == StatusCode::type_error) TORCH_CHECK_TYPE(false, s.message());
  if (value_errors) TORCH_CHECK_VALUE(false, s.message());
  TORCH_CHECK(false, s.message());
}

inline at::IntArrayRef as_sizes(const Shape& s) {
  return at::IntArrayRef(s.data(), s.size());
}

// A fresh host buffer of at least core::kHugeHintBytes is backed by transparent huge pages before
// the op first writes it (core/memory.h): its first touch is otherwise mostly 4 KiB page faults
// (a 64 MiB output: 30.7 ms to fill through faults, 9.7 ms when already touched, on the CI VM).
// The binding's own at::empty calls only (never pinned memory).
inline at::Tensor advise_fresh(at::Tensor t) {
  if (t.device().is_cpu()) core::advise_huge_pages(t.data_ptr(), static_cast<size_t>(t.nbytes()));
  return t;
}

// A new output of `shape`, contiguous. An empty output may have sizes whose contiguous strides
// overflow int64 (e.g. [0, 2^62, 7] for B = 0 and a huge max_seq_len), which at::empty refuses;
// its strides are never used to reach memory, so they saturate instead.
inline at::Tensor new_output(const Shape& shape, const at::TensorOptions& opts) {
  bool empty = false;
  for (int64_t s : shape) empty = empty || s == 0;
  if (!empty) return advise_fresh(at::empty(as_sizes(shape), opts));
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t st = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = st;
    const int64_t n = shape[i] > 1 ? shape[i] : 1;
    st = st > INT64_MAX / n ? INT64_MAX / 2 : st * n;
  }
  return at::empty_strided(as_sizes(shape), strides, opts);
}

// CPU calls run on torch's intra-op thread count, so torch.set_num_threads applies to recops too.
inline Context cpu_context() {
  Context ctx;
  ctx.num_threads = at::get_num_threads();
  return ctx;
}

// Shape sizes of a tensor for shape functions run by Meta kernels: true when every size is a plain
// integer (eager meta tensors, static compile); false when some are symbolic (dynamic compile).
inline bool has_concrete_sizes(const at::Tensor& t) {
  for (const auto& s : t.sym_sizes())
    if (!s.maybe_as_int()) return false;
  return true;
}

}  // namespace recops::binding
