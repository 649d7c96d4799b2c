// jagged/jagged_index_select/jagged_index_select.cpp: the entry. All validation happens here,
// once; then the ordered implementation list runs the first implementation that accepts. At the
// end: the op's registration (its OpInfos for `recops list` and its argument tables).
#include "ops/jagged/jagged_index_select/jagged_index_select.h"

#include <vector>

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "core/offsets.h"
#include "ops/jagged/common/select_entry.h"
#include "ops/jagged/common/select_host.h"
#include "ops/jagged/jagged_index_select/impls.h"

namespace recops::ops::jagged_index_select_ns {
namespace {
constexpr const char* kOp = "jagged_index_select";
constexpr const char* kBwd = "jagged_index_select_bwd";

using Params = SelectParams;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(select_run_cuda), select_run_cpu, run_reference);
  return list;
}

bool floating(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// Ranks, dtypes, strides and devices of values (or `name`), seq_lengths and indices.
Status check_meta(const char* op, const char* name, const TensorView& values,
                  const TensorView& lengths, const TensorView& indices,
                  const std::optional<int64_t>& rows) {
  RECOPS_CHECK(values.ndim >= 1, op, ": ", name, " must be [total_L, *E], got a 0-D tensor");
  RECOPS_CHECK(values.inner_contiguous(1), op, ": ", name,
               "'s trailing dims must be dense (last stride 1); got ", describe(values));
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "seq_lengths", lengths));
  RECOPS_RETURN_IF_ERROR(select_check_int_1d(op, "indices", indices));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, values, "seq_lengths", lengths));
  RECOPS_RETURN_IF_ERROR(core::check_same_device(op, name, values, "indices", indices));
  if (rows) RECOPS_CHECK(*rows >= 0, op, ": num_dense_output_rows=", *rows, " must be >= 0");
  return Status::Ok();
}

// The contents (on the host: always for CPU tensors, under validation for CUDA ones): lengths
// >= 0 summing to total_L, indices in [0, B). *selected = sum_k lengths[indices[k]], or -1 when
// the tensors were not read.
Status check_contents(const char* op, const TensorView& lengths, const TensorView& indices,
                      int64_t total_L, const Context& ctx, int64_t* selected) {
  *selected = -1;
  std::vector<int64_t> len, idx;
  bool read_len = false, read_idx = false;
  RECOPS_RETURN_IF_ERROR(select_read_ints(lengths, ctx, &len, &read_len));
  RECOPS_RETURN_IF_ERROR(select_read_ints(indices, ctx, &idx, &read_idx));
  if (!read_len || !read_idx) return Status::Ok();
  int64_t sum = 0;
  RECOPS_RETURN_IF_ERROR(select_check_lengths(op, "seq_lengths", len, &sum));
  RECOPS_CHECK(sum == total_L, op, ": seq_lengths sum to ", sum,
               " but values.size(0) (total_L) is ", total_L, "; they must be equal");
  RECOPS_RETURN_IF_ERROR(
      select_check_indices(op, "indices", idx, lengths.sizes[0], "seq_lengths.size(0)"));
  int64_t s = 0;
  for (int64_t i : idx) s += len[static_cast<size_t>(i)];  // <= K * total_L: fits for real inputs
  *selected = s;
  return Status::Ok();
}

Status check_rows(const char* op, int64_t selected, int64_t rows, const char* rows_rule) {
  if (selected >= 0)
    RECOPS_CHECK(selected == rows, op, ": the selected sequences hold ", selected, " rows but ",
                 rows_rule, " is ", rows, "; they must be equal");
  return Status::Ok();
}

Shape rows_shape(int64_t rows, const TensorView& like) {
  Shape s = {rows};
  for (int i = 1; i < like.ndim; ++i) s.push_back(like.sizes[i]);
  return s;
}
}  // namespace
}  // namespace recops::ops::jagged_index_select_ns

namespace recops {

Status jagged_index_select_shape(const JaggedIndexSelectArgs& a, Shape* out_shape,
                                 Shape* out_lengths_shape, const Context& ctx) {
  using namespace ops::jagged_index_select_ns;
  RECOPS_RETURN_IF_ERROR(
      check_meta(kOp, "values", a.values, a.seq_lengths, a.indices, a.num_dense_output_rows));
  int64_t rows = 0;
  if (a.num_dense_output_rows) {
    rows = *a.num_dense_output_rows;
  } else if (a.indices.sizes[0] == 0) {
    rows = 0;  // K = 0 selects nothing: known without reading (the run checks the lengths)
  } else {
    RECOPS_CHECK(ops::select_host_readable(a.seq_lengths) && ops::select_host_readable(a.indices),
                 kOp,
                 ": num_dense_output_rows (the sum of seq_lengths[indices]) must be given for ",
                 a.seq_lengths.device.is_cpu() ? "tensors without data (Meta, torch.compile)"
                                               : "CUDA tensors (computing it would synchronise)");
    RECOPS_RETURN_IF_ERROR(
        check_contents(kOp, a.seq_lengths, a.indices, a.values.sizes[0], ctx, &rows));
  }
  *out_shape = rows_shape(rows, a.values);
  *out_lengths_shape = {a.indices.sizes[0]};
  return Status::Ok();
}

size_t jagged_index_select_workspace_bytes(const JaggedIndexSelectArgs& a) {
  using namespace ops::jagged_index_select_ns;
  if (!check_meta(kOp, "values", a.values, a.seq_lengths, a.indices, a.num_dense_output_rows).ok())
    return 0;
  return ops::select_workspace_bytes(
      ops::select_params(a.values, a.seq_lengths, a.indices, a.seq_lengths.sizes[0]),
      a.values.device.type);
}

Status jagged_index_select(const JaggedIndexSelectArgs& a, const TensorView& out,
                           const TensorView& out_lengths, const Context& ctx) {
  using namespace ops::jagged_index_select_ns;
  RECOPS_RETURN_IF_ERROR(
      check_meta(kOp, "values", a.values, a.seq_lengths, a.indices, a.num_dense_output_rows));
  RECOPS_CHECK(out.ndim >= 1, kOp, ": out must be [num_dense_output_rows, *E]");
  const int64_t rows = out.sizes[0];
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "values", a.values, "out", out));
  RECOPS_RETURN_IF_ERROR(
      core::check_same_device(kOp, "values", a.values, "out_lengths", out_lengths));
  RECOPS_CHECK(out.shape() == rows_shape(rows, a.values) && out.dtype == a.values.dtype &&
                   out.is_contiguous(),
               kOp, ": out must be contiguous [rows, *E] of values' trailing dims and dtype; got ",
               describe(out));
  RECOPS_CHECK(out_lengths.ndim == 1 && out_lengths.sizes[0] == a.indices.sizes[0] &&
                   out_lengths.dtype == a.seq_lengths.dtype && out_lengths.is_contiguous(),
               kOp, ": out_lengths must be contiguous [K] = [", a.indices.sizes[0],
               "] of seq_lengths' dtype; got ", describe(out_lengths));
  if (a.num_dense_output_rows)
    RECOPS_CHECK(*a.num_dense_output_rows == rows, kOp, ": out has ", rows,
                 " rows but num_dense_output_rows is ", *a.num_dense_output_rows);
  int64_t selected = -1;
  RECOPS_RETURN_IF_ERROR(
      check_contents(kOp, a.seq_lengths, a.indices, a.values.sizes[0], ctx, &selected));
  RECOPS_RETURN_IF_ERROR(check_rows(kOp, selected, rows, "num_dense_output_rows (out.size(0))"));
  Params p = ops::select_params(a.values, a.seq_lengths, a.indices, a.seq_lengths.sizes[0]);
  p.dst = out.data;
  p.out_lengths = out_lengths.data;
  p.total_L = a.values.sizes[0];
  p.out_rows = rows;
  if (p.K == 0) return Status::Ok();  // no sequences selected: both outputs are empty
  return ops::select_dispatch(kOp, impls(), p, a.values.device.type, ctx);
}

size_t jagged_index_select_bwd_workspace_bytes(const JaggedIndexSelectBwdArgs& a) {
  using namespace ops::jagged_index_select_ns;
  if (!check_meta(kBwd, "grad", a.grad, a.seq_lengths, a.indices, std::nullopt).ok()) return 0;
  Params p = ops::select_params(a.grad, a.seq_lengths, a.indices, a.seq_lengths.sizes[0]);
  p.backward = true;
  return ops::select_workspace_bytes(p, a.grad.device.type);
}

Status jagged_index_select_bwd(const JaggedIndexSelectBwdArgs& a, const TensorView& grad_values,
                               const Context& ctx) {
  using namespace ops::jagged_index_select_ns;
  RECOPS_RETURN_IF_ERROR(check_meta(kBwd, "grad", a.grad, a.seq_lengths, a.indices, std::nullopt));
  RECOPS_CHECK(floating(a.grad.dtype), kBwd, ": grad must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(a.grad.dtype));
  RECOPS_CHECK(a.values.ndim >= 1 && a.values.dtype == a.grad.dtype &&
                   rows_shape(a.grad.sizes[0], a.values) == a.grad.shape(),
               kBwd, ": grad ", describe(a.grad),
               " must be [rows, *E] with values' trailing dims and dtype (", describe(a.values),
               ")");
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kBwd, "grad", a.grad, "grad_values", grad_values));
  RECOPS_CHECK(grad_values.shape() == a.values.shape() && grad_values.dtype == a.values.dtype &&
                   grad_values.is_contiguous(),
               kBwd, ": grad_values must be contiguous and like values (", describe(a.values),
               "); got ", describe(grad_values));
  int64_t selected = -1;
  RECOPS_RETURN_IF_ERROR(
      check_contents(kBwd, a.seq_lengths, a.indices, a.values.sizes[0], ctx, &selected));
  RECOPS_RETURN_IF_ERROR(check_rows(kBwd, selected, a.grad.sizes[0], "grad.size(0)"));
  Params p = ops::select_params(a.grad, a.seq_lengths, a.indices, a.seq_lengths.sizes[0]);
  p.backward = true;
  p.dst = grad_values.data;
  p.total_L = a.values.sizes[0];
  p.out_rows = a.grad.sizes[0];
  if (grad_values.numel() == 0) return Status::Ok();  // nothing to write
  return ops::select_dispatch(kBwd, impls(), p, a.grad.device.type, ctx);
}

}  // namespace recops

// ---- registration: the OpInfos and the argument tables (core/kit/op_def.h) ----
namespace recops::ops::jagged_index_select_ns {
namespace {
using Args = JaggedIndexSelectArgs;
using BwdArgs = JaggedIndexSelectBwdArgs;

Status fwd_shapes(const Args& a, std::vector<kit::OutSpec>* outs, const Context& ctx) {
  Shape s, ls;
  RECOPS_RETURN_IF_ERROR(jagged_index_select_shape(a, &s, &ls, ctx));
  outs->push_back({s, a.values.dtype});
  outs->push_back({ls, a.seq_lengths.dtype});
  return Status::Ok();
}
Status fwd_run(const Args& a, const kit::Outputs& o, const Context& ctx) {
  return jagged_index_select(a, o.views[0], o.views[1], ctx);
}
size_t fwd_workspace(const Args& a, const kit::Outputs&) {
  return jagged_index_select_workspace_bytes(a);
}
size_t bwd_workspace(const BwdArgs& a, const kit::Outputs&) {
  return jagged_index_select_bwd_workspace_bytes(a);
}

constexpr const char* kDoc = R"(Selects whole sequences of a jagged tensor, in index order.

Output sequence ``k`` is input sequence ``indices[k]`` (rows ``values[o_b : o_b + L_b]`` with
``o`` the complete cumsum of ``seq_lengths``); an index may repeat.

Args:
    values: ``[total_L, *E]``, any dtype (the gradient: fp64, fp32, fp16, bf16).
    seq_lengths: ``[B]`` int32 or int64, >= 0, summing to ``total_L``.
    indices: ``[K]`` int32 or int64, each in ``[0, B)``.
    num_dense_output_rows: ``sum_k seq_lengths[indices[k]]``. Required for CUDA tensors and
        under torch.compile (the op never synchronises); computed on the host otherwise.

Returns:
    ``(out [num_dense_output_rows, *E], out_lengths [K])``, ``out_lengths[k] =
    seq_lengths[indices[k]]``.

Differentiable in ``values``: the gradient of input sequence ``b`` is the sum, in ascending
``k``, of the gradients of the output sequences with ``indices[k] = b`` (0 when none; no
atomics). Double backward raises.

Raises:
    RuntimeError naming the argument and the rule: negative lengths or a sum other than
    ``values.size(0)``; an index out of range; ``num_dense_output_rows`` that disagrees with
    the selected lengths; integer tensors of another dtype or rank; tensors on different
    devices. On CUDA the contents are checked only with validation on.
)";
}  // namespace
}  // namespace recops::ops::jagged_index_select_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::jagged_index_select_ns;
  reg.add(OpInfo{kOp, "jagged", core::describe_impls(impls())});
  reg.add(OpInfo{kBwd, "jagged", core::describe_impls(impls())});
  reg.add(
      kit::Def<Args>(kOp, "jagged")
          .arg<&Args::values>("values", {.grad = true, .dense_from = 1})
          .arg<&Args::seq_lengths>("seq_lengths")
          .arg<&Args::indices>("indices")
          .arg<&Args::num_dense_output_rows>("num_dense_output_rows", {.def = "None", .sym = true})
          .out("out")
          .out("out_lengths", false)
          .shapes(fwd_shapes)
          .run(fwd_run)
          .workspace(fwd_workspace)
          .backward(kBwd)
          .fake_in_python()
          .doc("", kDoc));
  // The helper op of the fake kernel (fake.py): the forward with num_dense_output_rows given (an
  // int or the unbacked size the fake kernel made); its Meta kernel is binding.cpp's.
  reg.add(kit::Def<Args>("_jagged_index_select_meta", "jagged")
              .arg<&Args::values>("values", {.dense_from = 1})
              .arg<&Args::seq_lengths>("seq_lengths")
              .arg<&Args::indices>("indices")
              .arg<&Args::num_dense_output_rows>("num_dense_output_rows", {.sym = true})
              .out("out")
              .out("out_lengths", false)
              .shapes(fwd_shapes)
              .run(fwd_run)
              .workspace(fwd_workspace)
              .doc("-", ""));
  reg.add(kit::Def<BwdArgs>(kBwd, "jagged")
              .arg<&BwdArgs::grad>("grad", {.dense_from = 1})
              .arg<&BwdArgs::values>("values", {.dense_from = 1})
              .arg<&BwdArgs::seq_lengths>("seq_lengths")
              .arg<&BwdArgs::indices>("indices")
              .arg<&BwdArgs::num_dense_output_rows>("num_dense_output_rows",
                                                    {.def = "None", .sym = true})
              .out_like("grad_values", "values")
              .shapes_like<&BwdArgs::values>()
              .run_one<&jagged_index_select_bwd>()
              .workspace(bwd_workspace)
              .doc("-", ""));
}
