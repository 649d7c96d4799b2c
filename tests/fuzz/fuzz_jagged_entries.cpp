// tests/fuzz/fuzz_jagged_entries.cpp: random offsets, lengths, shapes, dtypes and scalars through
// the public entries of every jagged op (forward and backward) and the cumsum family on the CPU.
// Errors are fine; crashes, sanitizer reports and out-of-bounds accesses are not. Every tensor
// handed to an op is really allocated at the size its view claims: the fuzzer attacks the
// validation of contents and shapes, not the caller's contract that a view describes its memory.
// The first three blocks (conversions, cumsum) are the original ones; the others build their
// arguments with fuzz_util.h's Arena (padded and zero strides, sizes up to 2^62).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_util.h"
#include "ops/jagged/array_jagged_bmm_jagged_out/array_jagged_bmm_jagged_out.h"
#include "ops/jagged/concat_2d_jagged/concat_2d_jagged.h"
#include "ops/jagged/expand_1d_jagged_to_dense/expand_1d_jagged_to_dense.h"
#include "ops/jagged/jagged2_dense_elementwise_mul/jagged2_dense_elementwise_mul.h"
#include "ops/jagged/jagged2_softmax/jagged2_softmax.h"
#include "ops/jagged/jagged2_to_padded_dense/jagged2_to_padded_dense.h"
#include "ops/jagged/jagged_dense_bmm/jagged_dense_bmm.h"
#include "ops/jagged/jagged_dense_elementwise_add/jagged_dense_elementwise_add.h"
#include "ops/jagged/jagged_dense_elementwise_mul/jagged_dense_elementwise_mul.h"
#include "ops/jagged/jagged_dense_flash_attention/jagged_dense_flash_attention.h"
#include "ops/jagged/jagged_index_select/jagged_index_select.h"
#include "ops/jagged/jagged_jagged_bmm/jagged_jagged_bmm.h"
#include "ops/jagged/jagged_jagged_bmm_jagged_out/jagged_jagged_bmm_jagged_out.h"
#include "ops/jagged/jagged_softmax/jagged_softmax.h"
#include "ops/jagged/keyed_jagged_index_select_dim1/keyed_jagged_index_select_dim1.h"
#include "ops/jagged/multi_head_jagged_flash_attention/multi_head_jagged_flash_attention.h"
#include "ops/jagged/permute_1D_sparse_data/permute_1D_sparse_data.h"
#include "ops/jagged/permute_2D_sparse_data/permute_2D_sparse_data.h"
#include "ops/jagged/segment_sum_csr/segment_sum_csr.h"

namespace {

using namespace recops_fuzz;

// A shape of 0..max_dims dims with small extents (bounded total size).
Shape small_shape(FuzzedDataProvider& fdp, int min_dims, int max_dims, int64_t max_extent) {
  Shape s;
  const int nd = fdp.ConsumeIntegralInRange<int>(min_dims, max_dims);
  for (int i = 0; i < nd; ++i) s.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, max_extent));
  return s;
}

// A tensor filled from the fuzzer's bytes (the rest zero).
bool make(FuzzedDataProvider& fdp, const Shape& shape, DType t, Tensor* out) {
  if (numel(shape) > kMaxElems) return false;
  *out = Tensor::empty(shape, t);
  const size_t bytes = static_cast<size_t>(out->nbytes());
  std::vector<uint8_t> raw = fdp.ConsumeBytes<uint8_t>(bytes);
  raw.resize(bytes, 0);
  if (bytes) std::memcpy(out->data(), raw.data(), bytes);
  return true;
}

// seq_offsets: mostly plausible (a cumsum of small lengths, perhaps corrupted at one place),
// sometimes raw bytes, with a random dtype and rank.
bool make_offsets(FuzzedDataProvider& fdp, Tensor* out, int64_t* last) {
  const DType t =
      fdp.ConsumeBool() ? (fdp.ConsumeBool() ? DType::int64 : DType::int32) : any_dtype(fdp);
  const int64_t n = fdp.ConsumeIntegralInRange<int64_t>(0, 70);
  Shape shape = {n};
  if (fdp.ConsumeIntegralInRange<int>(0, 9) == 0) shape = {1, n};
  if (!make(fdp, shape, t, out)) return false;
  *last = 0;
  if ((t == DType::int64 || t == DType::int32) && fdp.ConsumeBool()) {
    int64_t acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) acc += fdp.ConsumeIntegralInRange<int64_t>(0, 40);
      const int64_t v =
          fdp.ConsumeIntegralInRange<int>(0, 30) == 0 ? fdp.ConsumeIntegral<int64_t>() : acc;
      if (t == DType::int64)
        static_cast<int64_t*>(out->data())[i] = v;
      else
        static_cast<int32_t*>(out->data())[i] = static_cast<int32_t>(v);
    }
    *last = acc;
  }
  return true;
}

void fuzz_jagged_to_padded_dense(FuzzedDataProvider& fdp) {
  Tensor off;
  int64_t last = 0;
  if (!make_offsets(fdp, &off, &last)) return;
  const DType t = any_dtype(fdp);
  const int64_t total_L = fdp.ConsumeBool() ? last : fdp.ConsumeIntegralInRange<int64_t>(0, 300);
  Shape vshape = {total_L};
  for (int64_t e : small_shape(fdp, 0, 2, 9)) vshape.push_back(e);
  Tensor values;
  if (!make(fdp, vshape, t, &values)) return;
  const int64_t max_L = fdp.ConsumeBool() ? fdp.ConsumeIntegralInRange<int64_t>(-3, 50)
                                          : fdp.ConsumeIntegral<int64_t>();
  const double pad = fdp.ConsumeBool()
                         ? fdp.ConsumeFloatingPoint<double>()
                         : static_cast<double>(fdp.ConsumeIntegralInRange<int>(-2, 300));
  Shape out_shape;
  if (!recops::jagged_to_padded_dense_shape(values, off, max_L, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 4, 40);
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0 && !out_shape.empty() && out_shape.back() < 1000)
    out_shape.back() += 1;
  Tensor out;
  if (!make(fdp, out_shape, fdp.ConsumeIntegralInRange<int>(0, 7) ? t : any_dtype(fdp), &out))
    return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  (void)recops::jagged_to_padded_dense(values, off, max_L, pad, out, ctx);
}

void fuzz_dense_to_jagged(FuzzedDataProvider& fdp) {
  Tensor off;
  int64_t last = 0;
  if (!make_offsets(fdp, &off, &last)) return;
  const DType t = any_dtype(fdp);
  const int64_t B = off.view().ndim == 1 && off.numel() > 0 ? off.numel() - 1 : 0;
  Shape dshape = {
      fdp.ConsumeIntegralInRange<int>(0, 9) ? B : fdp.ConsumeIntegralInRange<int64_t>(0, 5),
      fdp.ConsumeIntegralInRange<int64_t>(0, 45)};
  for (int64_t e : small_shape(fdp, 0, 2, 7)) dshape.push_back(e);
  if (fdp.ConsumeIntegralInRange<int>(0, 15) == 0) dshape.resize(1);
  Tensor dense;
  if (!make(fdp, dshape, t, &dense)) return;
  int64_t total_L = fdp.ConsumeBool() ? last : fdp.ConsumeIntegralInRange<int64_t>(-2, 300);
  if (fdp.ConsumeBool()) {
    int64_t read = 0;
    if (recops::dense_to_jagged_total_L(off, &read).ok()) total_L = read;
  }
  Shape out_shape;
  if (!recops::dense_to_jagged_shape(dense, off, total_L, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 3, 300);
  Tensor out;
  if (!make(fdp, out_shape, fdp.ConsumeIntegralInRange<int>(0, 7) ? t : any_dtype(fdp), &out))
    return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  (void)recops::dense_to_jagged(dense, off, out, ctx);
}

void fuzz_cumsum(FuzzedDataProvider& fdp) {
  const int which = fdp.ConsumeIntegralInRange<int>(0, 2);
  const DType t = fdp.ConsumeIntegralInRange<int>(0, 7)
                      ? (fdp.ConsumeBool() ? DType::int64 : DType::int32)
                      : any_dtype(fdp);
  Tensor in;
  if (!make(fdp, small_shape(fdp, 0, 3, 300), t, &in)) return;
  const DType ot = fdp.ConsumeIntegralInRange<int>(0, 7)
                       ? (fdp.ConsumeBool() ? DType::int64 : DType::int32)
                       : any_dtype(fdp);
  Shape out_shape = in.shape();
  if (which == 0 && !recops::complete_cumsum_shape(in, &out_shape).ok()) return;
  if (fdp.ConsumeIntegralInRange<int>(0, 7) == 0) out_shape = small_shape(fdp, 0, 3, 300);
  Tensor out;
  if (!make(fdp, out_shape, ot, &out)) return;
  recops::Context ctx;
  if (fdp.ConsumeBool()) ctx.impl = fdp.ConsumeBool() ? "reference" : "cpu_generic";
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  if (which == 0)
    (void)recops::complete_cumsum(in, out, ctx);
  else if (which == 1)
    (void)recops::exclusive_cumsum(in, out, ctx);
  else
    (void)recops::inclusive_cumsum(in, out, ctx);
}

// ---- the other jagged ops: their arguments from the Arena ----

DType float_dtype(FuzzedDataProvider& fdp) {
  return dtype_or_any(fdp, pick(fdp, {DType::fp32, DType::fp64, DType::fp16, DType::bf16}));
}

DType index_dtype(FuzzedDataProvider& fdp) {
  return dtype_or_any(fdp, fdp.ConsumeBool() ? DType::int32 : DType::int64, 16);
}

// A batch size: mostly in [0, 24], sometimes extreme (refused by the view bound or the op).
int64_t batch_arg(FuzzedDataProvider& fdp) {
  return fdp.ConsumeIntegralInRange<int>(0, 11) ? fdp.ConsumeIntegralInRange<int64_t>(0, 24)
                                                : size_arg(fdp, 0, 24);
}

// A small extent (a feature or head dim), sometimes extreme.
int64_t dim_arg(FuzzedDataProvider& fdp, int64_t hi = 9) {
  return fdp.ConsumeIntegralInRange<int>(0, 11) ? fdp.ConsumeIntegralInRange<int64_t>(0, hi)
                                                : size_arg(fdp, 0, hi);
}

// max_seq_len-like scalars: usually the longest sequence or near it, sometimes anything. (A
// fuzzed `longest` may be any int64: the harness's own + 3 stays representable, lo <= hi.)
int64_t len_arg(FuzzedDataProvider& fdp, int64_t longest) {
  const int64_t hi = longest < INT64_MAX - 3 ? longest + 3 : INT64_MAX;
  return fdp.ConsumeBool() ? longest : size_arg(fdp, hi < -1 ? hi : -1, hi);
}

recops::Context ctx_arg(FuzzedDataProvider& fdp) {
  recops::Context ctx;
  ctx.impl = impl_arg(fdp, {"reference", "cpu_generic"});
  ctx.num_threads = fdp.ConsumeIntegralInRange<int>(0, 3);
  return ctx;
}

// Offsets [B+1] of sequences up to max_len long (sometimes corrupted, another dtype or rank).
struct Jagged {
  TensorView offsets;
  int64_t B = 0, total = 0, longest = 0;
};
bool jagged(FuzzedDataProvider& fdp, Arena& ar, Jagged* j, int64_t max_len = 24) {
  j->B = batch_arg(fdp);
  return ar.offsets(j->B, index_dtype(fdp), max_len, &j->offsets, &j->total, &j->longest);
}

// A 1-D int view holding `vals` (each sometimes a raw value instead), in a layout the Arena
// picks (padded or zero strides).
bool int_view(FuzzedDataProvider& fdp, Arena& ar, const std::vector<int64_t>& vals, DType t,
              TensorView* out) {
  if (!ar.view({static_cast<int64_t>(vals.size())}, t, out)) return false;
  if (t != DType::int32 && t != DType::int64) return true;
  for (size_t i = 0; i < vals.size(); ++i) {
    const int64_t x =
        fdp.ConsumeIntegralInRange<int>(0, 40) ? vals[i] : fdp.ConsumeIntegral<int64_t>();
    const int64_t off = static_cast<int64_t>(i) * out->strides[0];
    if (t == DType::int64)
      static_cast<int64_t*>(out->data)[off] = x;
    else
      static_cast<int32_t*>(out->data)[off] = static_cast<int32_t>(x);
  }
  return true;
}

// The jagged² layout (block b an N_b x N_b matrix): seq_lengths N_b, offsets (cumsum N_b) and
// square_offsets (cumsum N_b²), each sometimes corrupted.
struct Jagged2 {
  TensorView lengths, offsets, square_offsets;
  int64_t B = 0, total = 0, total2 = 0, longest = 0;
};
bool jagged2(FuzzedDataProvider& fdp, Arena& ar, Jagged2* j) {
  j->B = batch_arg(fdp);
  if (j->B < 0 || j->B > 64) return false;
  std::vector<int64_t> n, off = {0}, off2 = {0};
  for (int64_t b = 0; b < j->B; ++b) {
    n.push_back(fdp.ConsumeIntegralInRange<int64_t>(0, 12));
    off.push_back(off.back() + n.back());
    off2.push_back(off2.back() + n.back() * n.back());
    if (n.back() > j->longest) j->longest = n.back();
  }
  j->total = off.back();
  j->total2 = off2.back();
  const DType t = index_dtype(fdp);
  return int_view(fdp, ar, n, t, &j->lengths) && int_view(fdp, ar, off, t, &j->offsets) &&
         int_view(fdp, ar, off2, fdp.ConsumeIntegralInRange<int>(0, 7) ? t : index_dtype(fdp),
                  &j->square_offsets);
}

// The sum of a 1-D int view's entries (0 for another dtype), saturating.
int64_t int_sum(const TensorView& v) {
  if (v.ndim != 1 || (v.dtype != DType::int32 && v.dtype != DType::int64)) return 0;
  int64_t s = 0;
  for (int64_t i = 0; i < v.sizes[0]; ++i) {
    const int64_t off = i * v.strides[0];
    const int64_t x = v.dtype == DType::int64 ? static_cast<const int64_t*>(v.data)[off]
                                              : static_cast<const int32_t*>(v.data)[off];
    if (__builtin_add_overflow(s, x, &s)) return INT64_MAX;
  }
  return s;
}

// A backward's incoming gradient of `grad_shape` (dtype t, sometimes another) and its first
// output of `out_shape` and t.
bool grad_and_out(FuzzedDataProvider& fdp, Arena& ar, const Shape& grad_shape,
                  const Shape& out_shape, DType t, TensorView* grad, TensorView* out) {
  return ar.view(grad_shape, dtype_or_any(fdp, t), grad) && ar.output(out_shape, t, out);
}

// [lead, *E] with E of 0..max_dims small dims.
Shape rows_shape(FuzzedDataProvider& fdp, int64_t lead, int max_dims = 2) {
  Shape s = {lead};
  const int nd = fdp.ConsumeIntegralInRange<int>(0, max_dims);
  for (int i = 0; i < nd; ++i) s.push_back(dim_arg(fdp, 6));
  return s;
}

void fuzz_expand_1d_jagged_to_dense(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::Expand1dJaggedToDenseArgs a;
  if (!jagged(fdp, ar, &j) || !ar.view({len_arg(fdp, j.total)}, any_dtype(fdp), &a.values)) return;
  a.seq_offsets = j.offsets;
  a.max_len = len_arg(fdp, j.longest);
  Shape so;
  TensorView out;
  if (!recops::expand_1d_jagged_to_dense_shape(a, &so).ok() || !ar.output(so, a.values.dtype, &out))
    return;
  (void)recops::expand_1d_jagged_to_dense(a, out, ctx_arg(fdp));
}

void fuzz_jagged_softmax(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::JaggedSoftmaxArgs a;
  if (!jagged(fdp, ar, &j) ||
      !ar.view(rows_shape(fdp, len_arg(fdp, j.total), 1), float_dtype(fdp), &a.values))
    return;
  a.seq_offsets = j.offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  Shape so;
  TensorView y;
  if (!recops::jagged_softmax_shape(a, &so).ok() || !ar.output(so, a.values.dtype, &y)) return;
  if (!recops::jagged_softmax(a, y, ctx_arg(fdp)).ok() || fdp.ConsumeBool()) return;
  recops::JaggedSoftmaxBwdArgs b{TensorView{}, y, a.seq_offsets, a.max_seq_len};
  TensorView dx;
  if (!grad_and_out(fdp, ar, y.shape(), y.shape(), y.dtype, &b.grad, &dx)) return;
  (void)recops::jagged_softmax_bwd(b, dx, ctx_arg(fdp));
}

void fuzz_jagged_dense_elementwise(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::JaggedDenseElementwiseArgs a;
  if (!jagged(fdp, ar, &j)) return;
  const Shape xs = rows_shape(fdp, len_arg(fdp, j.total));
  Shape ys = {fdp.ConsumeIntegralInRange<int>(0, 7) ? j.B : batch_arg(fdp),
              len_arg(fdp, j.longest)};
  for (size_t i = 1; i < xs.size(); ++i)
    ys.push_back(fdp.ConsumeIntegralInRange<int>(0, 7) ? xs[i] : dim_arg(fdp));
  const DType t = float_dtype(fdp);
  if (!ar.view(xs, t, &a.x_values) || !ar.view(ys, dtype_or_any(fdp, t), &a.y)) return;
  a.seq_offsets = j.offsets;
  const bool add = fdp.ConsumeBool();
  Shape so;
  TensorView out;
  if (!(add ? recops::jagged_dense_elementwise_add_shape(a, &so)
            : recops::jagged_dense_elementwise_mul_shape(a, &so))
           .ok() ||
      !ar.output(so, t, &out))
    return;
  if (add) {
    (void)recops::jagged_dense_elementwise_add(a, out, ctx_arg(fdp));
    return;
  }
  (void)recops::jagged_dense_elementwise_mul(a, out, ctx_arg(fdp));
  recops::JaggedDenseElementwiseMulBwdArgs b{TensorView{}, a.x_values, a.seq_offsets, a.y};
  TensorView dx, dy;
  if (!grad_and_out(fdp, ar, so, xs, t, &b.grad, &dx) || !ar.output(ys, t, &dy)) return;
  (void)recops::jagged_dense_elementwise_mul_bwd(b, dx, dy, ctx_arg(fdp));
}

void fuzz_jagged_dense_bmm(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::JaggedDenseBmmArgs a;
  if (!jagged(fdp, ar, &j)) return;
  const int64_t K = dim_arg(fdp), N = dim_arg(fdp);
  const DType t = float_dtype(fdp);
  if (!ar.view({len_arg(fdp, j.total), K}, t, &a.x_values) ||
      !ar.view({fdp.ConsumeIntegralInRange<int>(0, 7) ? j.B : batch_arg(fdp),
                fdp.ConsumeIntegralInRange<int>(0, 7) ? K : dim_arg(fdp), N},
               dtype_or_any(fdp, t), &a.y))
    return;
  a.seq_offsets = j.offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  a.allow_tf32 = fdp.ConsumeBool();
  Shape zs;
  TensorView z;
  if (!recops::jagged_dense_bmm_shape(a, &zs).ok() || !ar.output(zs, t, &z)) return;
  if (!recops::jagged_dense_bmm(a, z, ctx_arg(fdp)).ok() || fdp.ConsumeBool()) return;
  recops::JaggedDenseBmmBwdArgs b{TensorView{}, a.x_values, a.seq_offsets, a.y, a.max_seq_len};
  TensorView dx, dy;
  if (!grad_and_out(fdp, ar, zs, a.x_values.shape(), t, &b.grad, &dx) ||
      !ar.output(a.y.shape(), t, &dy))
    return;
  (void)recops::jagged_dense_bmm_bwd(b, dx, dy, ctx_arg(fdp));
}

void fuzz_jagged_jagged_bmm(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::JaggedJaggedBmmArgs a;
  if (!jagged(fdp, ar, &j)) return;
  const int64_t rows = len_arg(fdp, j.total);
  const DType t = float_dtype(fdp);
  if (!ar.view({rows, dim_arg(fdp)}, t, &a.x_values) ||
      !ar.view({fdp.ConsumeIntegralInRange<int>(0, 7) ? rows : dim_arg(fdp), dim_arg(fdp)},
               dtype_or_any(fdp, t), &a.y_values))
    return;
  a.seq_offsets = j.offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  Shape zs;
  TensorView z;
  if (!recops::jagged_jagged_bmm_shape(a, &zs).ok() || !ar.output(zs, t, &z)) return;
  if (!recops::jagged_jagged_bmm(a, z, ctx_arg(fdp)).ok() || fdp.ConsumeBool()) return;
  recops::JaggedJaggedBmmBwdArgs b{TensorView{}, a.x_values, a.y_values, a.seq_offsets,
                                   a.max_seq_len};
  TensorView dx, dy;
  if (!grad_and_out(fdp, ar, zs, a.x_values.shape(), t, &b.grad, &dx) ||
      !ar.output(a.y_values.shape(), t, &dy))
    return;
  (void)recops::jagged_jagged_bmm_bwd(b, dx, dy, ctx_arg(fdp));
}

void fuzz_jagged_dense_flash_attention(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::JaggedDenseFlashAttentionArgs a;
  if (!jagged(fdp, ar, &j)) return;
  const int64_t D = dim_arg(fdp), T = dim_arg(fdp), L = len_arg(fdp, j.total);
  const int64_t B = fdp.ConsumeIntegralInRange<int>(0, 7) ? j.B : batch_arg(fdp);
  a.max_seq_len = len_arg(fdp, j.longest);
  const DType t = float_dtype(fdp);
  if (!ar.view({L, D}, t, &a.q) || !ar.view({B, D, T}, dtype_or_any(fdp, t), &a.k) ||
      !ar.view({L, fdp.ConsumeIntegralInRange<int>(0, 7) ? D : dim_arg(fdp)}, t, &a.v) ||
      !ar.view({B, len_arg(fdp, a.max_seq_len), T}, dtype_or_any(fdp, t), &a.attn_bias))
    return;
  a.seq_offsets = j.offsets;
  Shape so;
  TensorView out, lse;
  if (!recops::jagged_dense_flash_attention_shape(a, &so).ok() || !ar.output(so, t, &out)) return;
  if (fdp.ConsumeBool()) {
    (void)recops::jagged_dense_flash_attention(a, out, ctx_arg(fdp));
    return;
  }
  if (!ar.output({so[0], so[1]}, DType::fp32, &lse) ||
      !recops::jagged_dense_flash_attention_fwd(a, out, lse, ctx_arg(fdp)).ok())
    return;
  recops::JaggedDenseFlashAttentionBwdArgs b;
  b.q = a.q, b.k = a.k, b.v = a.v, b.attn_bias = a.attn_bias, b.seq_offsets = a.seq_offsets;
  b.out = out, b.lse = lse, b.max_seq_len = a.max_seq_len;
  TensorView dq, dk, dv, dbias;
  if (!grad_and_out(fdp, ar, so, a.q.shape(), t, &b.grad, &dq) || !ar.output(a.k.shape(), t, &dk) ||
      !ar.output(a.v.shape(), t, &dv) || !ar.output(a.attn_bias.shape(), t, &dbias))
    return;
  (void)recops::jagged_dense_flash_attention_bwd(b, dq, dk, dv, dbias, ctx_arg(fdp));
}

void fuzz_multi_head_jagged_flash_attention(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged j;
  recops::MultiHeadJaggedFlashAttentionArgs a;
  if (!jagged(fdp, ar, &j)) return;
  const int64_t H = dim_arg(fdp, 3), D = dim_arg(fdp), L = len_arg(fdp, j.total);
  const DType t = float_dtype(fdp);
  if (!ar.view({H, L, D}, t, &a.q) || !ar.view({H, L, D}, dtype_or_any(fdp, t), &a.k) ||
      !ar.view({fdp.ConsumeIntegralInRange<int>(0, 7) ? H : dim_arg(fdp, 3), L, D}, t, &a.v))
    return;
  a.seq_offsets = j.offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  Shape so;
  TensorView out, lse;
  if (!recops::multi_head_jagged_flash_attention_shape(a, &so).ok() || !ar.output(so, t, &out))
    return;
  if (fdp.ConsumeBool()) {
    (void)recops::multi_head_jagged_flash_attention(a, out, ctx_arg(fdp));
    return;
  }
  if (!ar.output({H, L}, DType::fp32, &lse) ||
      !recops::multi_head_jagged_flash_attention_fwd(a, out, lse, ctx_arg(fdp)).ok())
    return;
  recops::MultiHeadJaggedFlashAttentionBwdArgs b;
  b.q = a.q, b.k = a.k, b.v = a.v, b.seq_offsets = a.seq_offsets, b.out = out, b.lse = lse;
  b.max_seq_len = a.max_seq_len;
  TensorView dq, dk, dv;
  if (!grad_and_out(fdp, ar, so, a.q.shape(), t, &b.grad, &dq) || !ar.output(a.k.shape(), t, &dk) ||
      !ar.output(a.v.shape(), t, &dv))
    return;
  (void)recops::multi_head_jagged_flash_attention_bwd(b, dq, dk, dv, ctx_arg(fdp));
}

void fuzz_jagged2_to_padded_dense(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged2 j;
  recops::Jagged2ToPaddedDenseArgs a;
  if (!jagged2(fdp, ar, &j) || !ar.view({len_arg(fdp, j.total2)}, any_dtype(fdp), &a.values))
    return;
  a.offsets = j.square_offsets;
  a.max_length = len_arg(fdp, j.longest);
  a.padding_value = real_arg(fdp, 0.0);
  Shape so;
  TensorView out;
  if (!recops::jagged2_to_padded_dense_shape(a, &so).ok() || !ar.output(so, a.values.dtype, &out) ||
      !recops::jagged2_to_padded_dense(a, out, ctx_arg(fdp)).ok() || fdp.ConsumeBool())
    return;
  recops::Jagged2ToPaddedDenseBwdArgs b{TensorView{}, a.values, a.offsets, a.max_length};
  TensorView gv;
  if (!grad_and_out(fdp, ar, so, a.values.shape(), a.values.dtype, &b.grad, &gv)) return;
  (void)recops::jagged2_to_padded_dense_bwd(b, gv, ctx_arg(fdp));
}

void fuzz_jagged2_softmax(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged2 j;
  recops::Jagged2SoftmaxArgs a;
  if (!jagged2(fdp, ar, &j) || !ar.view({len_arg(fdp, j.total2)}, float_dtype(fdp), &a.x)) return;
  a.x_offsets = j.square_offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  a.transpose = fdp.ConsumeBool();
  TensorView y;
  if (!ar.output(a.x.shape(), a.x.dtype, &y) || !recops::jagged2_softmax(a, y, ctx_arg(fdp)).ok() ||
      fdp.ConsumeBool())
    return;
  recops::Jagged2SoftmaxBwdArgs b{TensorView{}, y, a.x_offsets, a.max_seq_len, a.transpose};
  TensorView dx;
  if (!grad_and_out(fdp, ar, y.shape(), y.shape(), y.dtype, &b.grad, &dx)) return;
  (void)recops::jagged2_softmax_bwd(b, dx, ctx_arg(fdp));
}

void fuzz_jagged2_dense_elementwise_mul(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged2 j;
  recops::Jagged2DenseElementwiseMulArgs a;
  if (!jagged2(fdp, ar, &j)) return;
  a.max_seq_len = len_arg(fdp, j.longest);
  const int64_t m = fdp.ConsumeIntegralInRange<int>(0, 7) ? a.max_seq_len : dim_arg(fdp);
  const DType t = float_dtype(fdp);
  if (!ar.view({len_arg(fdp, j.total2)}, t, &a.x) || !ar.view({m, m}, dtype_or_any(fdp, t), &a.y))
    return;
  a.seq_lengths = j.lengths;
  a.x_offsets = j.square_offsets;
  TensorView out;
  if (!ar.output(a.x.shape(), t, &out) ||
      !recops::jagged2_dense_elementwise_mul(a, out, ctx_arg(fdp)).ok() || fdp.ConsumeBool())
    return;
  recops::Jagged2DenseElementwiseMulBwdArgs b{TensorView{},  a.x,         a.y,
                                              a.seq_lengths, a.x_offsets, a.max_seq_len};
  TensorView dx;
  if (!grad_and_out(fdp, ar, a.x.shape(), a.x.shape(), t, &b.grad, &dx)) return;
  (void)recops::jagged2_dense_elementwise_mul_bwd(b, dx, ctx_arg(fdp));
}

void fuzz_array_jagged_bmm_jagged_out(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged2 j;
  recops::ArrayJaggedBmmJaggedOutArgs a;
  if (!jagged2(fdp, ar, &j)) return;
  const DType t = float_dtype(fdp);
  if (!ar.view({len_arg(fdp, j.total2)}, t, &a.x) ||
      !ar.view({len_arg(fdp, j.total), dim_arg(fdp)}, dtype_or_any(fdp, t), &a.y))
    return;
  a.seq_lengths = j.lengths;
  a.x_offsets = j.square_offsets;
  a.y_offsets = j.offsets;
  a.max_seq_len = len_arg(fdp, j.longest);
  TensorView z;
  if (!ar.output(a.y.shape(), t, &z) ||
      !recops::array_jagged_bmm_jagged_out(a, z, ctx_arg(fdp)).ok() || fdp.ConsumeBool())
    return;
  recops::ArrayJaggedBmmJaggedOutBwdArgs b{TensorView{}, a.x,         a.y,          a.seq_lengths,
                                           a.x_offsets,  a.y_offsets, a.max_seq_len};
  TensorView dx, dy;
  if (!grad_and_out(fdp, ar, a.y.shape(), a.x.shape(), t, &b.grad, &dx) ||
      !ar.output(a.y.shape(), t, &dy))
    return;
  (void)recops::array_jagged_bmm_jagged_out_bwd(b, dx, dy, ctx_arg(fdp));
}

void fuzz_jagged_jagged_bmm_jagged_out(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  Jagged2 j;
  recops::JaggedJaggedBmmJaggedOutArgs a;
  if (!jagged2(fdp, ar, &j)) return;
  const int64_t rows = len_arg(fdp, j.total), D = dim_arg(fdp);
  const DType t = float_dtype(fdp);
  if (!ar.view({rows, D}, t, &a.x) ||
      !ar.view({rows, fdp.ConsumeIntegralInRange<int>(0, 7) ? D : dim_arg(fdp)},
               dtype_or_any(fdp, t), &a.y))
    return;
  a.seq_lengths = j.lengths;
  a.offsets = j.offsets;
  a.z_offsets = j.square_offsets;
  a.total_z = len_arg(fdp, j.total2);
  a.max_seq_len = len_arg(fdp, j.longest);
  TensorView z;
  if (!ar.output({a.total_z}, t, &z) ||
      !recops::jagged_jagged_bmm_jagged_out(a, z, ctx_arg(fdp)).ok() || fdp.ConsumeBool())
    return;
  recops::JaggedJaggedBmmJaggedOutBwdArgs b{TensorView{}, a.x,         a.y,       a.seq_lengths,
                                            a.offsets,    a.z_offsets, a.total_z, a.max_seq_len};
  TensorView dx, dy;
  if (!grad_and_out(fdp, ar, {a.total_z}, a.x.shape(), t, &b.grad, &dx) ||
      !ar.output(a.y.shape(), t, &dy))
    return;
  (void)recops::jagged_jagged_bmm_jagged_out_bwd(b, dx, dy, ctx_arg(fdp));
}

// concat_2d_jagged: A and B each jagged (values + offsets) or dense [B, S, D].
bool concat_side(FuzzedDataProvider& fdp, Arena& ar, int64_t B, int64_t D, DType t,
                 TensorView* values, std::optional<TensorView>* offsets) {
  if (fdp.ConsumeBool()) {
    TensorView off;
    int64_t total = 0, longest = 0;
    if (!ar.offsets(B, index_dtype(fdp), 9, &off, &total, &longest)) return false;
    *offsets = off;
    return ar.view({len_arg(fdp, total), D}, t, values);
  }
  return ar.view({B, dim_arg(fdp), D}, t, values);
}

void fuzz_concat_2d_jagged(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::Concat2dJaggedArgs a;
  const int64_t B = batch_arg(fdp), D = dim_arg(fdp);
  const DType t = any_dtype(fdp);
  if (!concat_side(fdp, ar, B, D, t, &a.values_a, &a.offsets_a) ||
      !concat_side(fdp, ar, fdp.ConsumeIntegralInRange<int>(0, 7) ? B : batch_arg(fdp),
                   fdp.ConsumeIntegralInRange<int>(0, 7) ? D : dim_arg(fdp), dtype_or_any(fdp, t),
                   &a.values_b, &a.offsets_b))
    return;
  a.n_prefix_from_right = fdp.ConsumeBool() ? 0 : size_arg(fdp, -1, 5);
  a.is_replace = fdp.ConsumeIntegralInRange<int>(0, 3) == 0;
  Shape so;
  TensorView out;
  if (!recops::concat_2d_jagged_shape(a, &so).ok() || !ar.output(so, t, &out) ||
      !recops::concat_2d_jagged(a, out, ctx_arg(fdp)).ok() || fdp.ConsumeBool())
    return;
  recops::Concat2dJaggedBwdArgs b;
  static_cast<recops::Concat2dJaggedArgs&>(b) = a;
  TensorView ga, gb;
  if (!grad_and_out(fdp, ar, so, a.values_a.shape(), t, &b.grad, &ga) ||
      !ar.output(a.values_b.shape(), t, &gb))
    return;
  (void)recops::concat_2d_jagged_bwd(b, ga, gb, ctx_arg(fdp));
}

void fuzz_segment_sum_csr(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::SegmentSumCsrArgs a;
  a.batch_size = fdp.ConsumeIntegralInRange<int>(0, 7) ? fdp.ConsumeIntegralInRange(1, 4)
                                                       : size_arg(fdp, 0, 4);
  TensorView seg;
  int64_t last = 0, longest = 0;
  if (!ar.offsets(batch_arg(fdp), index_dtype(fdp), 9, &seg, &last, &longest)) return;
  a.csr_seg = seg;
  int64_t n = 0;
  if (__builtin_mul_overflow(last, a.batch_size, &n) || fdp.ConsumeIntegralInRange<int>(0, 7) == 0)
    n = size_arg(fdp, 0, 40);
  if (!ar.view({n}, float_dtype(fdp), &a.values)) return;
  Shape so;
  TensorView out;
  if (!recops::segment_sum_csr_shape(a, &so).ok() || !ar.output(so, a.values.dtype, &out)) return;
  (void)recops::segment_sum_csr(a, out, ctx_arg(fdp));
}

// Lengths [n] in [0, 9] (*meant; the view sometimes corrupts one); *sum their sum as written.
bool lengths_arg(FuzzedDataProvider& fdp, Arena& ar, int64_t n, DType t, TensorView* out,
                 int64_t* sum, std::vector<int64_t>* meant = nullptr) {
  if (n < 0 || n > 256) return false;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = fdp.ConsumeIntegralInRange<int64_t>(0, 9);
  if (meant) *meant = v;
  if (!int_view(fdp, ar, v, t, out)) return false;
  *sum = int_sum(*out);
  return true;
}

// Indices [K] in [0, bound) (sometimes out of range or raw).
bool indices_arg(FuzzedDataProvider& fdp, Arena& ar, int64_t bound, TensorView* out) {
  return ar.ints({dim_arg(fdp, 30)}, index_dtype(fdp), fdp.ConsumeBool() ? 0 : -1,
                 bound > 0 ? bound - (fdp.ConsumeIntegralInRange<int>(0, 15) ? 1 : 0) : 0, out);
}

void fuzz_jagged_index_select(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::JaggedIndexSelectArgs a;
  const int64_t B = batch_arg(fdp);
  int64_t total = 0;
  if (!lengths_arg(fdp, ar, B, index_dtype(fdp), &a.seq_lengths, &total) ||
      !indices_arg(fdp, ar, B, &a.indices) ||
      !ar.view(rows_shape(fdp, fdp.ConsumeIntegralInRange<int>(0, 7) ? total : dim_arg(fdp, 40)),
               any_dtype(fdp), &a.values))
    return;
  if (fdp.ConsumeBool()) a.num_dense_output_rows = size_arg(fdp, -1, 60);
  Shape so, sl;
  TensorView out, out_lengths;
  const recops::Context ctx = ctx_arg(fdp);
  if (!recops::jagged_index_select_shape(a, &so, &sl, ctx).ok() ||
      !ar.output(so, a.values.dtype, &out) || !ar.output(sl, a.seq_lengths.dtype, &out_lengths) ||
      !recops::jagged_index_select(a, out, out_lengths, ctx).ok() || fdp.ConsumeBool())
    return;
  recops::JaggedIndexSelectBwdArgs b{TensorView{}, a.values, a.seq_lengths, a.indices,
                                     a.num_dense_output_rows};
  TensorView gv;
  if (!grad_and_out(fdp, ar, so, a.values.shape(), a.values.dtype, &b.grad, &gv)) return;
  (void)recops::jagged_index_select_bwd(b, gv, ctx_arg(fdp));
}

void fuzz_keyed_jagged_index_select_dim1(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::KeyedJaggedIndexSelectDim1Args a;
  a.batch_size = fdp.ConsumeIntegralInRange<int>(0, 7) ? fdp.ConsumeIntegralInRange(1, 6)
                                                       : size_arg(fdp, 0, 6);
  const int64_t F = dim_arg(fdp, 4);
  int64_t n = 0, total = 0;
  if (__builtin_mul_overflow(F, a.batch_size, &n)) return;
  const DType lt = index_dtype(fdp);
  std::vector<int64_t> len;
  if (!lengths_arg(fdp, ar, n, lt, &a.lengths, &total, &len)) return;
  std::vector<int64_t> off = {0};  // the complete cumsum of the lengths meant (not as corrupted)
  for (int64_t x : len) off.push_back(off.back() + x);
  if (!int_view(fdp, ar, off, fdp.ConsumeIntegralInRange<int>(0, 7) ? lt : index_dtype(fdp),
                &a.offsets) ||
      !indices_arg(fdp, ar, a.batch_size, &a.indices) ||
      !ar.view({fdp.ConsumeIntegralInRange<int>(0, 7) ? total : dim_arg(fdp, 40)}, any_dtype(fdp),
               &a.values))
    return;
  TensorView w;
  if (fdp.ConsumeBool()) {
    if (!ar.view(a.values.shape(), float_dtype(fdp), &w)) return;
    a.weights = w;
  }
  if (fdp.ConsumeBool()) a.selected_lengths_sum = size_arg(fdp, -1, 60);
  Shape so, sl;
  TensorView out, out_lengths, out_weights;
  const recops::Context ctx = ctx_arg(fdp);
  if (!recops::keyed_jagged_index_select_dim1_shape(a, &so, &sl, ctx).ok() ||
      !ar.output(so, a.values.dtype, &out) || !ar.output(sl, a.lengths.dtype, &out_lengths) ||
      (a.weights && !ar.output(so, a.weights->dtype, &out_weights)))
    return;
  if (!recops::keyed_jagged_index_select_dim1(a, out, out_lengths,
                                              a.weights ? &out_weights : nullptr, ctx)
           .ok() ||
      fdp.ConsumeBool())
    return;
  recops::KeyedJaggedIndexSelectDim1BwdArgs b;
  b.values = a.values, b.lengths = a.lengths, b.offsets = a.offsets, b.indices = a.indices;
  b.batch_size = a.batch_size;
  TensorView gv;
  if (!grad_and_out(fdp, ar, so, a.values.shape(), a.values.dtype, &b.grad, &gv)) return;
  (void)recops::keyed_jagged_index_select_dim1_bwd(b, gv, ctx_arg(fdp));
}

void fuzz_permute_sparse_data(FuzzedDataProvider& fdp) {
  Arena ar(fdp);
  recops::PermuteSparseDataArgs a;
  const bool two_d = fdp.ConsumeBool();
  const int64_t T = dim_arg(fdp, 12), B = two_d ? dim_arg(fdp, 6) : 1;
  int64_t n = 0, total = 0;
  if (__builtin_mul_overflow(T, B, &n)) return;
  if (!lengths_arg(fdp, ar, n, index_dtype(fdp), &a.lengths, &total)) return;
  if (two_d) {  // [T, B] over the same entries (a padded or zero stride stays a 1-D layout)
    if (a.lengths.strides[0] != 1 && n > 1) return;
    a.lengths.ndim = 2;
    a.lengths.sizes[0] = T, a.lengths.sizes[1] = B;
    a.lengths.strides[0] = B, a.lengths.strides[1] = 1;
  }
  if (!indices_arg(fdp, ar, T, &a.permute) ||
      !ar.view(rows_shape(fdp, fdp.ConsumeIntegralInRange<int>(0, 7) ? total : dim_arg(fdp, 40)),
               any_dtype(fdp), &a.values))
    return;
  TensorView w;
  if (fdp.ConsumeBool()) {
    if (!ar.view(rows_shape(fdp, a.values.sizes[0]), float_dtype(fdp), &w)) return;
    a.weights = w;
  }
  if (fdp.ConsumeBool()) a.permuted_lengths_sum = size_arg(fdp, -1, 60);
  Shape sl, sv;
  const recops::Context ctx = ctx_arg(fdp);
  if (!(two_d ? recops::permute_2D_sparse_data_shape(a, &sl, &sv, ctx)
              : recops::permute_1D_sparse_data_shape(a, &sl, &sv, ctx))
           .ok())
    return;
  TensorView pl, pv, pw;
  Shape sw = a.weights ? a.weights->shape() : Shape{};
  if (a.weights) sw[0] = sv[0];
  if (!ar.output(sl, a.lengths.dtype, &pl) || !ar.output(sv, a.values.dtype, &pv) ||
      (a.weights && !ar.output(sw, a.weights->dtype, &pw)))
    return;
  if (two_d)
    (void)recops::permute_2D_sparse_data(a, pl, pv, a.weights ? &pw : nullptr, ctx);
  else
    (void)recops::permute_1D_sparse_data(a, pl, pv, a.weights ? &pw : nullptr, ctx);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider fdp(data, size);
  try {
    // 0-2: the original blocks (tests/fuzz/corpus/fuzz_jagged_entries/found_* select them with a
    // last byte of 0, 1 or 2).
    switch (fdp.ConsumeIntegralInRange<int>(0, 19)) {
      case 0: fuzz_jagged_to_padded_dense(fdp); break;
      case 1: fuzz_dense_to_jagged(fdp); break;
      case 2: fuzz_cumsum(fdp); break;
      case 3: fuzz_expand_1d_jagged_to_dense(fdp); break;
      case 4: fuzz_jagged_softmax(fdp); break;
      case 5: fuzz_jagged_dense_elementwise(fdp); break;
      case 6: fuzz_jagged_dense_bmm(fdp); break;
      case 7: fuzz_jagged_jagged_bmm(fdp); break;
      case 8: fuzz_jagged_dense_flash_attention(fdp); break;
      case 9: fuzz_multi_head_jagged_flash_attention(fdp); break;
      case 10: fuzz_jagged2_to_padded_dense(fdp); break;
      case 11: fuzz_jagged2_softmax(fdp); break;
      case 12: fuzz_jagged2_dense_elementwise_mul(fdp); break;
      case 13: fuzz_array_jagged_bmm_jagged_out(fdp); break;
      case 14: fuzz_jagged_jagged_bmm_jagged_out(fdp); break;
      case 15: fuzz_concat_2d_jagged(fdp); break;
      case 16: fuzz_segment_sum_csr(fdp); break;
      case 17: fuzz_jagged_index_select(fdp); break;
      case 18: fuzz_keyed_jagged_index_select_dim1(fdp); break;
      default: fuzz_permute_sparse_data(fdp); break;
    }
  } catch (const recops::Error&) {
    // Tensor::empty refusing a size is the harness's limit, not a finding.
  }
  return 0;
}
