// jagged/keyed_jagged_index_select_dim1/keyed_jagged_index_select_dim1.cpp: the entry. All
// validation happens here, once; then the ordered implementation list (the family's
// segment-select paths, then the golden) runs the first that accepts. At the end: the op's
// registration (its OpInfos and argument tables).
#include "ops/jagged/keyed_jagged_index_select_dim1/keyed_jagged_index_select_dim1.h"

#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/select_entry.h"
#include "ops/jagged/common/select_host.h"
#include "ops/jagged/keyed_jagged_index_select_dim1/impls.h"

namespace recops::ops::keyed_jagged_index_select_dim1_ns {
namespace {
constexpr const char* kOp = "keyed_jagged_index_select_dim1";
constexpr const char* kBwd = "keyed_jagged_index_select_dim1_bwd";
using Args = KeyedJaggedIndexSelectDim1Args;
using BwdArgs = KeyedJaggedIndexSelectDim1BwdArgs;

const std::vector<core::Impl<SelectParams>>& impls() {
  static const auto list = core::standard_impls<SelectParams>(RECOPS_IF_CUDA(select_run_cuda),
                                                              select_run_cpu, run_reference);
  return list;
}

bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// Ranks, dtypes, sizes and devices (no data is read). `name`: values, or grad for the backward.
Status check_meta(const char* op, const char* name, const TensorView& v, const TensorView& lengths,
                  const TensorView& offsets, const TensorView& indices, int64_t batch_size,
                  const std::optional<TensorView>& weights, const TensorView& values) {
  RECOPS_CHECK(v.ndim == 1, op, ": ", name, " must be 1-D, got ", describe(v));
  RECOPS_CHECK(batch_size >= 1, op, ": batch_size=", batch_size, " must be >= 1");
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "lengths", lengths));
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "offsets", offsets));
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "indices", indices));
  RECOPS_CHECK(lengths.sizes[0] % batch_size == 0, op, ": lengths.size(0)=", lengths.sizes[0],
               " must be a multiple of batch_size=", batch_size, " (num_keys * batch_size)");
  RECOPS_CHECK(offsets.sizes[0] == lengths.sizes[0] + 1, op, ": offsets.size(0)=", offsets.sizes[0],
               " must be lengths.size(0) + 1 = ", lengths.sizes[0] + 1);
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, v, "lengths", lengths));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, v, "offsets", offsets));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, v, "indices", indices));
  if (weights) {
    RECOPS_CHECK(
        weights->ndim == 1 && weights->sizes[0] == values.sizes[0] && floating(weights->dtype), op,
        ": weights must be 1-D [total] = [", values.sizes[0], "] of fp64, fp32, fp16 or bf16; got ",
        describe(*weights));
    RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, v, "weights", *weights));
  }
  return Status::Ok();
}

// Contents, on the host (always for CPU tensors, under validation for CUDA ones): offsets valid
// with last = total, lengths their steps, indices in [0, B). *selected = R, or -1 when unread.
Status check_contents(const char* op, const TensorView& lengths, const TensorView& offsets,
                      const TensorView& indices, int64_t batch_size, int64_t total,
                      const Context& ctx, int64_t* selected) {
  *selected = -1;
  RECOPS_RETURN_IF_ERROR(
      core::validate_offsets(op, "offsets", offsets, total, "values.size(0)", ctx));
  std::vector<int64_t> len, off, idx;
  bool r1 = false, r2 = false, r3 = false;
  RECOPS_RETURN_IF_ERROR(select_read_ints(lengths, ctx, &len, &r1));
  RECOPS_RETURN_IF_ERROR(select_read_ints(offsets, ctx, &off, &r2));
  RECOPS_RETURN_IF_ERROR(select_read_ints(indices, ctx, &idx, &r3));
  if (!r1 || !r2 || !r3) return Status::Ok();
  for (size_t s = 0; s < len.size(); ++s)
    RECOPS_CHECK(len[s] == off[s + 1] - off[s], op, ": lengths[", s, "]=", len[s], " but offsets[",
                 s + 1, "] - offsets[", s, "] = ", off[s + 1] - off[s],
                 "; offsets must be the complete cumsum of lengths");
  RECOPS_RETURN_IF_ERROR(select_check_indices(op, "indices", idx, batch_size, "batch_size"));
  const int64_t F = static_cast<int64_t>(len.size()) / batch_size;
  int64_t s = 0;
  for (int64_t f = 0; f < F; ++f)
    for (int64_t i : idx) s += len[static_cast<size_t>(f * batch_size + i)];
  *selected = s;
  return Status::Ok();
}

Status check_out(const char* what, const TensorView& t, int64_t n, DType dtype,
                 const TensorView& like) {
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", like, what, t));
  RECOPS_CHECK(t.ndim == 1 && t.sizes[0] == n && t.dtype == dtype && t.is_contiguous(), kOp, ": ",
               what, " must be contiguous [", n, "] of ", dtype_name(dtype), "; got ", describe(t));
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::keyed_jagged_index_select_dim1_ns

namespace recops {

Status keyed_jagged_index_select_dim1_shape(const KeyedJaggedIndexSelectDim1Args& a,
                                            Shape* out_shape, Shape* out_lengths_shape,
                                            const Context& ctx) {
  using namespace ops::keyed_jagged_index_select_dim1_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kOp, "values", a.values, a.lengths, a.offsets, a.indices,
                                    a.batch_size, a.weights, a.values));
  int64_t rows = 0;
  if (a.selected_lengths_sum) {
    rows = *a.selected_lengths_sum;
    RECOPS_CHECK(rows >= 0, kOp, ": selected_lengths_sum=", rows, " must be >= 0");
  } else if (a.indices.sizes[0] == 0 || a.lengths.sizes[0] == 0) {
    rows = 0;  // no batch position or no key: nothing selected, known without reading
  } else {
    RECOPS_CHECK(ops::select_host_readable(a.lengths) && ops::select_host_readable(a.offsets) &&
                     ops::select_host_readable(a.indices),
                 kOp, ": selected_lengths_sum must be given for ",
                 a.lengths.device.is_cpu() ? "tensors without data (Meta, torch.compile)"
                                           : "CUDA tensors (computing it would synchronise)");
    RECOPS_RETURN_IF_ERROR(check_contents(kOp, a.lengths, a.offsets, a.indices, a.batch_size,
                                          a.values.sizes[0], ctx, &rows));
  }
  *out_shape = {rows};
  *out_lengths_shape = {a.lengths.sizes[0] / a.batch_size * a.indices.sizes[0]};
  return Status::Ok();
}

size_t keyed_jagged_index_select_dim1_workspace_bytes(const KeyedJaggedIndexSelectDim1Args& a) {
  using namespace ops::keyed_jagged_index_select_dim1_ns;
  if (!check_meta(kOp, "values", a.values, a.lengths, a.offsets, a.indices, a.batch_size, a.weights,
                  a.values)
           .ok())
    return 0;
  return ops::select_workspace_bytes(
      ops::select_params(a.values, a.lengths, a.indices, a.batch_size), a.values.device.type);
}

Status keyed_jagged_index_select_dim1(const KeyedJaggedIndexSelectDim1Args& a,
                                      const TensorView& out, const TensorView& out_lengths,
                                      const TensorView* out_weights, const Context& ctx) {
  using namespace ops::keyed_jagged_index_select_dim1_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kOp, "values", a.values, a.lengths, a.offsets, a.indices,
                                    a.batch_size, a.weights, a.values));
  RECOPS_CHECK(out.ndim == 1, kOp, ": out must be 1-D [R]; got ", describe(out));
  const int64_t rows = out.sizes[0];
  ops::SelectParams p = ops::select_params(a.values, a.lengths, a.indices, a.batch_size);
  RECOPS_RETURN_IF_ERROR(check_out("out", out, rows, a.values.dtype, a.values));
  RECOPS_RETURN_IF_ERROR(
      check_out("out_lengths", out_lengths, p.F * p.K, a.lengths.dtype, a.values));
  RECOPS_CHECK((out_weights != nullptr) == a.weights.has_value(), kOp,
               ": out_weights must be given exactly when weights are");
  if (a.weights)
    RECOPS_RETURN_IF_ERROR(
        check_out("out_weights", *out_weights, rows, a.weights->dtype, a.values));
  if (a.selected_lengths_sum)
    RECOPS_CHECK(*a.selected_lengths_sum == rows, kOp, ": out has ", rows,
                 " rows but selected_lengths_sum is ", *a.selected_lengths_sum);
  int64_t selected = -1;
  RECOPS_RETURN_IF_ERROR(check_contents(kOp, a.lengths, a.offsets, a.indices, a.batch_size,
                                        a.values.sizes[0], ctx, &selected));
  if (selected >= 0)
    RECOPS_CHECK(selected == rows, kOp, ": the selected segments hold ", selected,
                 " values but selected_lengths_sum (out.size(0)) is ", rows,
                 "; they must be equal");
  if (p.F * p.K == 0) return Status::Ok();  // nothing selected: every output is empty
  p.dst = out.data;
  p.out_lengths = out_lengths.data;
  p.total_L = a.values.sizes[0];
  p.out_rows = rows;
  RECOPS_RETURN_IF_ERROR(ops::select_dispatch(kOp, impls(), p, a.values.device.type, ctx));
  if (!a.weights) return Status::Ok();
  // The weights follow the values' row mapping: the same call on them, lengths not rewritten.
  ops::SelectParams w = p;
  w.src = a.weights->data;
  w.src_row_stride = a.weights->strides[0];
  w.dtype = a.weights->dtype;
  w.dst = out_weights->data;
  w.out_lengths = nullptr;
  return ops::select_dispatch(kOp, impls(), w, a.values.device.type, ctx);
}

size_t keyed_jagged_index_select_dim1_bwd_workspace_bytes(
    const KeyedJaggedIndexSelectDim1BwdArgs& a) {
  using namespace ops::keyed_jagged_index_select_dim1_ns;
  if (!check_meta(kBwd, "grad", a.grad, a.lengths, a.offsets, a.indices, a.batch_size, std::nullopt,
                  a.values)
           .ok())
    return 0;
  ops::SelectParams p = ops::select_params(a.grad, a.lengths, a.indices, a.batch_size);
  p.backward = true;
  return ops::select_workspace_bytes(p, a.grad.device.type);
}

Status keyed_jagged_index_select_dim1_bwd(const KeyedJaggedIndexSelectDim1BwdArgs& a,
                                          const TensorView& grad_values, const Context& ctx) {
  using namespace ops::keyed_jagged_index_select_dim1_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, "grad", a.grad, a.lengths, a.offsets, a.indices,
                                    a.batch_size, std::nullopt, a.values));
  RECOPS_CHECK(floating(a.grad.dtype) && a.grad.dtype == a.values.dtype && a.values.ndim == 1, kBwd,
               ": grad must be fp64, fp32, fp16 or bf16 and share 1-D values' dtype; got ",
               describe(a.grad), " and values ", describe(a.values));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "grad_values", grad_values));
  RECOPS_CHECK(grad_values.shape() == a.values.shape() && grad_values.dtype == a.values.dtype &&
                   grad_values.is_contiguous(),
               kBwd, ": grad_values must be contiguous and like values (", describe(a.values),
               "); got ", describe(grad_values));
  int64_t selected = -1;
  RECOPS_RETURN_IF_ERROR(check_contents(kBwd, a.lengths, a.offsets, a.indices, a.batch_size,
                                        a.values.sizes[0], ctx, &selected));
  if (selected >= 0)
    RECOPS_CHECK(selected == a.grad.sizes[0], kBwd, ": the selected segments hold ", selected,
                 " values but grad.size(0) is ", a.grad.sizes[0], "; they must be equal");
  if (grad_values.numel() == 0) return Status::Ok();  // nothing to write
  ops::SelectParams p = ops::select_params(a.grad, a.lengths, a.indices, a.batch_size);
  p.backward = true;
  p.dst = grad_values.data;
  p.total_L = a.values.sizes[0];
  p.out_rows = a.grad.sizes[0];
  return ops::select_dispatch(kBwd, impls(), p, a.grad.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::keyed_jagged_index_select_dim1_ns {
namespace {
Status fwd_shapes(const Args& a, std::vector<kit::OutSpec>* outs, const Context& ctx) {
  Shape s, ls;
  RECOPS_RETURN_IF_ERROR(keyed_jagged_index_select_dim1_shape(a, &s, &ls, ctx));
  outs->push_back({s, a.values.dtype});
  outs->push_back({ls, a.lengths.dtype});
  if (a.weights)
    outs->push_back({s, a.weights->dtype});
  else
    outs->push_back({{0}, a.values.dtype, false});
  return Status::Ok();
}
Status fwd_run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return keyed_jagged_index_select_dim1(a, o.views[0], o.views[1], o.get(2), ctx);
}
size_t fwd_workspace(const Args& a, const kit::Outputs&) {
  return keyed_jagged_index_select_dim1_workspace_bytes(a);
}
size_t bwd_workspace(const BwdArgs& a, const kit::Outputs&) {
  return keyed_jagged_index_select_dim1_bwd_workspace_bytes(a);
}

constexpr const char* kDoc =
    R"(Selects the same batch positions in every key of a keyed jagged tensor.

Output segment ``f*K + k`` is input segment ``f*batch_size + indices[k]`` (key-major, as
FBGEMM's ``keyed_jagged_index_select_dim1``); weights follow the values.

Args:
    values: ``[total]``, any dtype.
    lengths: ``[num_keys * batch_size]`` int32 or int64, key-major.
    offsets: ``[num_keys * batch_size + 1]``, the complete cumsum of ``lengths``.
    indices: ``[K]`` int32 or int64, each in ``[0, batch_size)``.
    batch_size: >= 1.
    weights: optional ``[total]`` fp64, fp32, fp16 or bf16 (no gradient).
    selected_lengths_sum: the output size R. Required for CUDA tensors and under
        torch.compile (the op never synchronises); computed on the host otherwise.

Returns:
    ``(out [R], out_lengths [num_keys * K], out_weights [R])``; ``out_weights`` is an empty
    ``[0]`` tensor without weights.

Differentiable in ``values`` (the sum over repeated indices in ascending ``k``, no atomics).

Raises:
    RuntimeError naming the argument and the rule: offsets invalid or not the cumsum of
    lengths; an index out of range; ``selected_lengths_sum`` that disagrees with the data;
    shapes, dtypes or devices that do not match. On CUDA contents are checked only with
    validation on.
)";
}  // namespace
}  // namespace recops::ops::keyed_jagged_index_select_dim1_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::keyed_jagged_index_select_dim1_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(
      kit::Def<Args>(kOp, "jagged")
          .arg<&Args::values>("values", {.grad = true})
          .arg<&Args::lengths>("lengths")
          .arg<&Args::offsets>("offsets")
          .arg<&Args::indices>("indices")
          .arg<&Args::batch_size>("batch_size", {.sym = true})
          .arg<&Args::weights>("weights", {.def = "None"})
          .arg<&Args::selected_lengths_sum>("selected_lengths_sum", {.def = "None", .sym = true})
          .out("out")
          .out("out_lengths", false)
          .out("out_weights", false)
          .shapes(fwd_shapes)
          .run(fwd_run)
          .workspace(fwd_workspace)
          .backward(kBwd)
          .fake_in_python()
          .doc("", kDoc));
  // The helper op of the fake kernel (fake.py): the forward with selected_lengths_sum given (an
  // int or the unbacked size the fake kernel made); its Meta kernel is binding.cpp's.
  reg.add(kit::Def<Args>("_keyed_jagged_index_select_dim1_meta", "jagged")
              .arg<&Args::values>("values")
              .arg<&Args::lengths>("lengths")
              .arg<&Args::offsets>("offsets")
              .arg<&Args::indices>("indices")
              .arg<&Args::batch_size>("batch_size", {.sym = true})
              .arg<&Args::weights>("weights")
              .arg<&Args::selected_lengths_sum>("selected_lengths_sum", {.sym = true})
              .out("out")
              .out("out_lengths", false)
              .out("out_weights", false)
              .shapes(fwd_shapes)
              .run(fwd_run)
              .workspace(fwd_workspace)
              .doc("-", ""));
  reg.add(
      kit::Def<BwdArgs>(kBwd, "jagged")
          .arg<&BwdArgs::grad>("grad")
          .arg<&BwdArgs::values>("values")
          .arg<&BwdArgs::lengths>("lengths")
          .arg<&BwdArgs::offsets>("offsets")
          .arg<&BwdArgs::indices>("indices")
          .arg<&BwdArgs::batch_size>("batch_size", {.sym = true})
          .arg<&BwdArgs::weights>("weights", {.def = "None"})
          .arg<&BwdArgs::selected_lengths_sum>("selected_lengths_sum", {.def = "None", .sym = true})
          .out_like("grad_values", "values")
          .shapes_like<&BwdArgs::values>()
          .run_one<&keyed_jagged_index_select_dim1_bwd>()
          .workspace(bwd_workspace)
          .doc("-", ""));
}
