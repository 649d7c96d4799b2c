// ops/jagged/common/permute_entry.cpp: see permute_entry.h. The validation of the permute ops:
// ranks, dtypes, devices and strides always; the contents (lengths >= 0 summing to
// values.size(0), permute in [0, T), permuted_lengths_sum equal to the permuted lengths' sum)
// always on the CPU and on CUDA under validation (select_host.h reads them, one sync). On the CPU
// the last rule is the paths' (permute_rows_error): they gather the permuted lengths anyway.
#include "ops/jagged/common/permute_entry.h"

#include <utility>

#include "core/offsets.h"
#include "ops/jagged/common/select_cpu.h"
#include "ops/jagged/common/select_host.h"

namespace recops::ops {
namespace {
bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// Ranks, dtypes, strides and devices (no data is read; the Meta kernel runs this too).
Status check_meta(const PermuteOp& op, const PermuteSparseDataArgs& a) {
  const char* n = op.name;
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(n, "permute", a.permute));
  if (op.two_d) {
    RECOPS_CHECK(a.lengths.ndim == 2, n, ": lengths must be 2-D [T, B], got ", describe(a.lengths));
    RECOPS_CHECK(a.lengths.dtype == DType::int32 || a.lengths.dtype == DType::int64, n,
                 ": lengths must be int32 or int64, got ", dtype_name(a.lengths.dtype));
    RECOPS_CHECK(a.lengths.is_contiguous(), n, ": lengths must be contiguous [T, B], got strides [",
                 a.lengths.strides[0], ", ", a.lengths.strides[1], "]");
  } else {
    RECOPS_RETURN_IF_ERROR(select_check_int_1d(n, "lengths", a.lengths));
  }
  RECOPS_CHECK(a.values.ndim >= 1 && a.values.inner_contiguous(1), n,
               ": values must be [N, *E] with dense trailing dims, got ", describe(a.values));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(n, "values", a.values, "permute", a.permute));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(n, "values", a.values, "lengths", a.lengths));
  if (a.weights) {
    const TensorView& w = *a.weights;
    RECOPS_CHECK(w.ndim >= 1 && w.sizes[0] == a.values.sizes[0] && w.inner_contiguous(1) &&
                     floating(w.dtype),
                 n, ": weights must be [N, *E] with N = values.size(0) = ", a.values.sizes[0],
                 ", dense trailing dims, fp64, fp32, fp16 or bf16; got ", describe(w));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(n, "values", a.values, "weights", w));
  }
  if (a.permuted_lengths_sum)
    RECOPS_CHECK(*a.permuted_lengths_sum >= 0, n,
                 ": permuted_lengths_sum=", *a.permuted_lengths_sum, " must be >= 0");
  return Status::Ok();
}

// lengths as a flat 1-D view [T*B] (contiguous for the 2-D op, checked above).
TensorView flat_lengths(const TensorView& l) {
  if (l.ndim == 1) return l;
  TensorView v = l;
  v.ndim = 1;
  v.sizes[0] = l.sizes[0] * l.sizes[1];
  v.strides[0] = 1;
  return v;
}

// The contents, on the host (CPU tensors always; CUDA ones under validation). *rows = the sum of
// the permuted lengths, or -1 when the data was not read.
Status check_contents(const PermuteOp& op, const PermuteSparseDataArgs& a, const Context& ctx,
                      int64_t* rows) {
  const char* n = op.name;
  *rows = -1;
  std::vector<int64_t> len, perm;
  bool r1 = false, r2 = false;
  RECOPS_RETURN_IF_ERROR(select_read_ints(flat_lengths(a.lengths), ctx, &len, &r1));
  RECOPS_RETURN_IF_ERROR(select_read_ints(a.permute, ctx, &perm, &r2));
  if (!r1 || !r2) return Status::Ok();
  int64_t total = 0;
  RECOPS_RETURN_IF_ERROR(select_check_lengths(n, "lengths", len, &total));
  RECOPS_CHECK(total == a.values.sizes[0], n, ": lengths sum to ", total, " but values.size(0) is ",
               a.values.sizes[0], "; they must be equal");
  const int64_t T = a.lengths.sizes[0];
  const int64_t B = op.two_d ? a.lengths.sizes[1] : 1;
  RECOPS_RETURN_IF_ERROR(select_check_indices(n, "permute", perm, T, "lengths.size(0)"));
  // Summed per permuted row, not per lengths row: lengths may be [T, 0] with T past memory (an
  // empty tensor), and the work stays that of the permuted lengths [P, B] the op writes anyway.
  int64_t s = 0;
  for (int64_t i : perm) {
    int64_t row = 0;  // each length is >= 0 and they sum to `total` without overflow: row <= total
    for (int64_t b = 0; b < B; ++b) row += len[static_cast<size_t>(i * B + b)];
    RECOPS_CHECK(s <= INT64_MAX - row, n, ": the permuted lengths' sum overflows int64");
    s += row;
  }
  *rows = s;
  return Status::Ok();
}

// CPU tensors, read in place and in parallel: lengths >= 0 summing to values.size(0) and permute
// in [0, T) (sequential reads); with `rows`, also the permuted lengths' sum (a gather from
// lengths: wanted by the shape function, which must size the outputs; the entry leaves it to the
// CPU paths, permute_rows_error). Any broken rule falls back to check_contents for its message.
Status check_contents_cpu(const PermuteOp& op, const PermuteSparseDataArgs& a, const Context& ctx,
                          int64_t* rows) {
  const TensorView l = flat_lengths(a.lengths);
  const int64_t T = a.lengths.sizes[0], B = op.two_d ? a.lengths.sizes[1] : 1;
  const int64_t n = l.sizes[0], P = a.permute.sizes[0];
  const auto length = [&](int64_t i) {
    const int64_t v = core::offset_at(l, i);
    return std::pair{v, v < 0};
  };
  const auto in_range = [&](int64_t i) {
    const int64_t t = core::offset_at(a.permute, i);
    return std::pair{int64_t{0}, t < 0 || t >= T};
  };
  const auto permuted_row = [&](int64_t i) {
    // a few rows ahead: their random reads overlap
    if (i + 16 < P)
      __builtin_prefetch(static_cast<const char*>(l.data) +
                         core::offset_at(a.permute, i + 16) * B * l.strides[0] * l.itemsize());
    const int64_t t = core::offset_at(a.permute, i);
    int64_t r = 0;
    for (int64_t b = 0; b < B; ++b) r += core::offset_at(l, t * B + b);
    return std::pair{r, false};
  };
  int64_t total = 0, unused = 0, s = 0;
  const int th = ctx.num_threads;
  const bool ok = chunked_sum(n, th, length, nullptr, &total) && total == a.values.sizes[0] &&
                  chunked_sum(P, th, in_range, nullptr, &unused) &&
                  (rows == nullptr || chunked_sum(P, th, permuted_row, nullptr, &s));
  if (!ok) {
    int64_t unused_rows = 0;
    RECOPS_RETURN_IF_ERROR(check_contents(op, a, ctx, &unused_rows));
    return Status(StatusCode::internal,
                  std::string(op.name) + ": the contents check disagrees with itself");
  }
  if (rows != nullptr) *rows = s;
  return Status::Ok();
}

Status check_out(const char* op, const char* what, const TensorView& t, const Shape& shape,
                 DType dtype, const TensorView& values) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, "values", values, what, t));
  RECOPS_CHECK(t.shape() == shape && t.dtype == dtype && t.is_contiguous(), op, ": ", what,
               " must be contiguous ", shape_str(shape), " of ", dtype_name(dtype), "; got ",
               describe(t));
  return Status::Ok();
}

PermuteParams params_of(const PermuteOp& op, const PermuteSparseDataArgs& a) {
  PermuteParams p;
  p.op = op.name;
  p.lengths = a.lengths.data;
  p.lengths_int64 = a.lengths.dtype == DType::int64;
  p.lengths_stride_t = op.two_d ? a.lengths.sizes[1] : a.lengths.strides[0];
  p.lengths_stride_b = 1;
  p.permute = a.permute.data;
  p.permute_int64 = a.permute.dtype == DType::int64;
  p.permute_stride = a.permute.strides[0];
  p.T = a.lengths.sizes[0];
  p.B = op.two_d ? a.lengths.sizes[1] : 1;
  p.P = a.permute.sizes[0];
  p.N = a.values.sizes[0];
  const auto payload = [](const TensorView& v) {
    return PermutePayload{v.data, v.strides[0], nullptr, v.inner_numel(1), v.itemsize()};
  };
  p.payload[0] = payload(a.values);
  p.num_payloads = a.weights ? 2 : 1;
  if (a.weights) p.payload[1] = payload(*a.weights);
  p.device_index = a.values.device.index;
  return p;
}
}  // namespace

Status permute_shape(const PermuteOp& op, const PermuteSparseDataArgs& a, Shape* lengths_shape,
                     Shape* values_shape, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(check_meta(op, a));
  int64_t rows = 0;
  if (a.permuted_lengths_sum) {
    rows = *a.permuted_lengths_sum;
  } else if (a.permute.sizes[0] == 0 || a.lengths.numel() == 0) {
    rows = 0;  // nothing permuted, or no lengths: known without reading
  } else {
    RECOPS_CHECK(select_host_readable(a.lengths) && select_host_readable(a.permute), op.name,
                 ": permuted_lengths_sum must be given for ",
                 a.lengths.device.is_cpu() ? "tensors without data (Meta, torch.compile)"
                                           : "CUDA tensors (computing it would synchronise)");
    RECOPS_RETURN_IF_ERROR(check_contents_cpu(op, a, ctx, &rows));
  }
  *lengths_shape = {a.permute.sizes[0]};
  if (op.two_d) lengths_shape->push_back(a.lengths.sizes[1]);
  *values_shape = a.values.shape();
  (*values_shape)[0] = rows;
  return Status::Ok();
}

size_t permute_workspace(const PermuteOp& op, const PermuteSparseDataArgs& a) {
  if (!check_meta(op, a).ok()) return 0;
  // Nothing runs when the permuted lengths are empty (permute_entry returns first), and lengths
  // [T, 0] may have any T: no workspace sized by T for it.
  if (a.permute.sizes[0] == 0 || (op.two_d && a.lengths.sizes[1] == 0)) return 0;
#ifdef RECOPS_WITH_CUDA
  if (a.values.device.type == DeviceType::cuda)
    return permute_cuda_workspace_bytes(params_of(op, a));
#endif
  return 0;
}

Status permute_entry(const PermuteOp& op, const PermuteSparseDataArgs& a,
                     const TensorView& permuted_lengths, const TensorView& permuted_values,
                     const TensorView* permuted_weights, const Context& ctx) {
  const char* n = op.name;
  RECOPS_RETURN_IF_ERROR(check_meta(op, a));
  RECOPS_CHECK(permuted_values.ndim >= 1, n, ": permuted_values must be [R, *E]; got ",
               describe(permuted_values));
  const int64_t rows = permuted_values.sizes[0];
  Shape ls = {a.permute.sizes[0]}, vs = a.values.shape();
  if (op.two_d) ls.push_back(a.lengths.sizes[1]);
  vs[0] = rows;
  RECOPS_RETURN_IF_ERROR(
      check_out(n, "permuted_lengths", permuted_lengths, ls, a.lengths.dtype, a.values));
  RECOPS_RETURN_IF_ERROR(
      check_out(n, "permuted_values", permuted_values, vs, a.values.dtype, a.values));
  RECOPS_CHECK((permuted_weights != nullptr) == a.weights.has_value(), n,
               ": permuted_weights must be given exactly when weights are");
  if (a.weights) {
    Shape ws = a.weights->shape();
    ws[0] = rows;
    RECOPS_RETURN_IF_ERROR(
        check_out(n, "permuted_weights", *permuted_weights, ws, a.weights->dtype, a.values));
  }
  if (a.permuted_lengths_sum)
    RECOPS_CHECK(*a.permuted_lengths_sum == rows, n, ": permuted_values has ", rows,
                 " rows but permuted_lengths_sum is ", *a.permuted_lengths_sum);
  if (select_host_readable(a.lengths) && select_host_readable(a.permute)) {
    // The permuted lengths' sum is the CPU paths' to check (permute_rows_error).
    RECOPS_RETURN_IF_ERROR(check_contents_cpu(op, a, ctx, nullptr));
  } else {
    int64_t want = -1;
    RECOPS_RETURN_IF_ERROR(check_contents(op, a, ctx, &want));
    if (want >= 0 && want != rows) return permute_rows_error(n, want, rows);
  }
  PermuteParams p = params_of(op, a);
  if (p.P * p.B == 0) {  // no permuted lengths: they sum to 0, and every output is empty
    RECOPS_CHECK(rows == 0, n, ": the permuted lengths are empty (", shape_str(ls),
                 ") but permuted_values has ", rows, " rows; it must have 0");
    return Status::Ok();
  }
  p.out_lengths = permuted_lengths.data;
  p.R = rows;
  p.payload[0].dst = permuted_values.data;
  if (a.weights) p.payload[1].dst = permuted_weights->data;
  const DeviceType dev = a.values.device.type;
  const size_t need = permute_workspace(op, a);
  RECOPS_CHECK(ctx.workspace_bytes >= need && (need == 0 || ctx.workspace != nullptr), n,
               ": needs ", need, " bytes of workspace (", n, "_workspace_bytes), got ",
               ctx.workspace_bytes);
  p.workspace = ctx.workspace;
  p.workspace_bytes = ctx.workspace_bytes;
  return core::dispatch(n, op.impls(), dev, p, ctx);
}

Status permute_rows_error(const char* op, int64_t want, int64_t rows) {
  RECOPS_CHECK(want >= 0, op, ": the permuted lengths' sum overflows int64");
  RECOPS_CHECK(want == rows, op, ": the permuted lengths sum to ", want,
               " but permuted_lengths_sum (permuted_values.size(0)) is ", rows,
               "; they must be equal");
  return Status::Ok();
}

std::string permute_doc(const PermuteOp& op, const char* intro) {
  const std::string rows = op.two_d ? "[T, B]" : "[T]", out_rows = op.two_d ? "[P, B]" : "[P]";
  return std::string(intro) + R"(
Args:
    permute: ``[P]`` int32 or int64, each in ``[0, T)``.
    lengths: ``)" +
         rows + R"(`` int32 or int64, >= 0, summing to ``values.size(0)``.
    values: ``[N, *E]``, any dtype.
    weights: optional ``[N, *E']`` fp64, fp32, fp16 or bf16.
    permuted_lengths_sum: the output size R. Required for CUDA tensors and under
        torch.compile (the op never synchronises); computed on the host otherwise.

Returns:
    ``(permuted_lengths )" +
         out_rows + R"(, permuted_values [R, *E], permuted_weights [R, *E'])``;
    ``permuted_weights`` is an empty ``[0]`` tensor without weights.

Not differentiable (forward only, see the op's README): inputs that require grad are refused.

Raises:
    RuntimeError naming the argument and the rule: a permute entry out of range; negative
    lengths or lengths that do not sum to ``values.size(0)``; ``permuted_lengths_sum`` that
    disagrees with the data; shapes, dtypes or devices that do not match. On CUDA the contents
    are checked only with validation on.
)";
}

const PermuteOp kPermute1D{"permute_1D_sparse_data", false, &permute_1D_impls};
const PermuteOp kPermute2D{"permute_2D_sparse_data", true, &permute_2D_impls};

}  // namespace recops::ops

namespace recops {
using ops::kPermute1D;
using ops::kPermute2D;

Status permute_1D_sparse_data_shape(const PermuteSparseDataArgs& a, Shape* lengths_shape,
                                    Shape* values_shape, const Context& ctx) {
  return ops::permute_shape(kPermute1D, a, lengths_shape, values_shape, ctx);
}
Status permute_2D_sparse_data_shape(const PermuteSparseDataArgs& a, Shape* lengths_shape,
                                    Shape* values_shape, const Context& ctx) {
  return ops::permute_shape(kPermute2D, a, lengths_shape, values_shape, ctx);
}
size_t permute_1D_sparse_data_workspace_bytes(const PermuteSparseDataArgs& a) {
  return ops::permute_workspace(kPermute1D, a);
}
size_t permute_2D_sparse_data_workspace_bytes(const PermuteSparseDataArgs& a) {
  return ops::permute_workspace(kPermute2D, a);
}
Status permute_1D_sparse_data(const PermuteSparseDataArgs& a, const TensorView& permuted_lengths,
                              const TensorView& permuted_values, const TensorView* permuted_weights,
                              const Context& ctx) {
  return ops::permute_entry(kPermute1D, a, permuted_lengths, permuted_values, permuted_weights,
                            ctx);
}
Status permute_2D_sparse_data(const PermuteSparseDataArgs& a, const TensorView& permuted_lengths,
                              const TensorView& permuted_values, const TensorView* permuted_weights,
                              const Context& ctx) {
  return ops::permute_entry(kPermute2D, a, permuted_lengths, permuted_values, permuted_weights,
                            ctx);
}

}  // namespace recops
