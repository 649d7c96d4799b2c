// training/solve_tril/solve_tril.cpp: the entry of solve_tril. All validation happens here, once;
// then the ordered implementation list runs the first implementation that accepts (cuda_sm80 in
// CUDA builds, cpu_generic, reference). At the end: the OpInfo and the argument table.
#include "ops/training/solve_tril/solve_tril.h"

#include "core/dispatch.h"
#include "core/kit/op_def.h"
#include "ops/training/common/gdn_entry.h"
#include "ops/training/common/packed_offsets.h"
#include "ops/training/solve_tril/impls.h"

namespace recops::ops::solve_tril_ns {
namespace {
constexpr const char* kOp = "solve_tril";
constexpr training::GdnEntry kEntry{kOp, "A"};
using training::is_float;

const std::vector<core::Impl<Params>>& impls() {
  static const auto list =
      core::standard_impls<Params>(RECOPS_IF_CUDA(run_cuda), run_cpu, run_reference);
  return list;
}

// ctx: the call's context, or nullptr in the shape function (offsets values unread).
Status check_args(const SolveTrilArgs& a, const Context* ctx, Params* p) {
  const TensorView& A = a.A;
  RECOPS_CHECK(A.ndim == 4 && is_float(A.dtype), kOp,
               ": A must be [B, T, HV, BT] of fp32 (or fp64, fp16, bf16); got ", describe(A));
  RECOPS_CHECK(A.is_contiguous(), kOp, ": A must be contiguous; got ", describe(A));
  const int64_t bt = A.sizes[3];
  RECOPS_CHECK(bt == 16 || bt == 32 || bt == 64, kOp, ": A's last dim (the chunk size BT) must be",
               " 16, 32 or 64; got ", bt);
  RECOPS_CHECK(!a.chunk_size || *a.chunk_size == bt, kOp, ": chunk_size=", *a.chunk_size,
               " must equal A's last dim ", bt);
  RECOPS_CHECK(!a.out_dtype || is_float(*a.out_dtype), kOp,
               ": out_dtype must be fp64, fp32, fp16 or bf16; got ", dtype_name(*a.out_dtype));
  const int64_t B = A.sizes[0], T = A.sizes[1];
  int64_t N = B;
  RECOPS_RETURN_IF_ERROR(kEntry.seq_offsets(a.seq_offsets, A, B, T, ctx, &N, p));
  p->B = B;
  p->T = T;
  p->H = A.sizes[2];
  p->BT = bt;
  p->N = N;
  p->device_index = A.device.index;
  return Status::Ok();
}
}  // namespace
}  // namespace recops::ops::solve_tril_ns

namespace recops {

Status solve_tril_shape(const SolveTrilArgs& a, Shape* out_shape, DType* out_dtype) {
  using namespace ops::solve_tril_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, nullptr, &p));
  *out_shape = a.A.shape();
  *out_dtype = a.out_dtype.value_or(DType::fp32);
  return Status::Ok();
}

Status solve_tril(const SolveTrilArgs& a, const TensorView& Ai, const Context& ctx) {
  using namespace ops::solve_tril_ns;
  Params p;
  RECOPS_RETURN_IF_ERROR(check_args(a, &ctx, &p));
  const DType t = a.out_dtype.value_or(DType::fp32);
  RECOPS_RETURN_IF_ERROR(core::check_same_device(kOp, "A", a.A, "Ai", Ai));
  RECOPS_CHECK(Ai.shape() == a.A.shape() && Ai.dtype == t && Ai.is_contiguous(), kOp,
               ": Ai must be contiguous ", dtype_name(t), shape_str(a.A.shape()),
               " (A's shape); got ", describe(Ai));
  p.a = a.A.data;
  p.out = Ai.data;
  p.in_dtype = a.A.dtype;
  p.out_dtype = t;
  if (ops::training::any_zero({p.B, p.T, p.H})) return Status::Ok();  // empty: nothing to do
  return core::dispatch(kOp, impls(), a.A.device.type, p, ctx);
}

}  // namespace recops

// ---- registration: the OpInfo and the argument table (core/kit/op_def.h) ----
namespace recops::ops::solve_tril_ns {
namespace {
Status fwd_shapes(const SolveTrilArgs& a, std::vector<kit::OutSpec>* outs) {
  Shape s;
  DType t;
  RECOPS_RETURN_IF_ERROR(solve_tril_shape(a, &s, &t));
  outs->push_back({s, t});
  return Status::Ok();
}

constexpr const char* kDoc =
    R"(Inverse of I + A per chunk block (the GDN WY step; fla-core's
``fla.ops.utils.solve_tril.solve_tril``). Forward only: no gradient (inputs that require grad
are refused).

Each sequence is cut into chunks of BT = ``A.shape[-1]`` positions counted from its own start
(the last one may be shorter: its block is the leading principal sub-block). Row t of ``A``
holds its chunk's row of the BT x BT block; only the strictly lower part (column < row within
the chunk) is read. Per chunk and head, ``Ai`` holds the rows of ``(I + A_c)^-1``: unit lower
triangular, zero above the diagonal. The CPU inverts the 16 x 16 diagonal blocks by forward
substitution and merges them with the block rule, all dots in fp32.

Args:
    A: ``[B, T, HV, BT]`` fp32 (fp64, fp16, bf16 accepted), BT in {16, 32, 64}.
    seq_offsets: ``[N+1]`` int32/int64 (fla's cu_seqlens) of packed sequences; needs B = 1;
        zero-length sequences are allowed.
    out_dtype: Ai's dtype; None means fp32 (fla's ``output_dtype=torch.float``).
    chunk_size: None, or A's last dim (checked).

Returns:
    Ai like ``A``, in out_dtype.
)";
}  // namespace
}  // namespace recops::ops::solve_tril_ns

RECOPS_REGISTER_OPS(reg) {
  using namespace recops;
  using namespace recops::ops::solve_tril_ns;
  using A = SolveTrilArgs;
  reg.add(OpInfo{kOp, "training", core::describe_impls(impls())});
  reg.add(kit::Def<A>(kOp, "training")
              .arg<&A::A>("A", {.dense_from = 0})
              .arg<&A::seq_offsets>("seq_offsets", {.def = "None", .dense_from = 0})
              .arg<&A::out_dtype>("out_dtype", {.def = "None"})
              .arg<&A::chunk_size>("chunk_size", {.def = "None"})
              .out("Ai")
              .shapes(fwd_shapes)
              .run_one<&solve_tril>()
              .forward_only()  // no gradient (README)
              .doc("", kDoc));
}
