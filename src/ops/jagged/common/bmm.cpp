// ops/jagged/common/bmm.cpp: the entries of jagged_dense_bmm, jagged_jagged_bmm and their
// backward ops (jagged_ops.md §2.6, §2.7). All validation happens here, once; then the ordered
// implementation list runs the first that accepts. Each backward is two forward calls on views
// (a transposed dense operand is a stride swap, no copy). The op folders hold the registration.
#include "ops/jagged/common/bmm.h"

#include "core/cpu_features.h"
#include "core/offsets.h"
#include "ops/jagged/common/bmm_api.h"

namespace recops::ops::bmm {

namespace {
#ifdef RECOPS_WITH_CUDA
std::string mma_accepts(const BmmParams& p) {
  if (p.dtype != DType::fp16 && p.dtype != DType::bf16)
    return "fp16 and bf16 only (fp32 and fp64: cuda_sm80)";
  return core::cuda_capability_at_least<80, BmmParams>(p);
}
#endif

std::vector<core::Impl<BmmParams>> list(Status (*reference)(const BmmParams&, const Context&)) {
  std::vector<core::Impl<BmmParams>> first;  // before cpu_generic and reference
#ifdef RECOPS_WITH_CUDA
  first.push_back(
      {"cuda_sm90", DeviceType::cuda, core::cuda::any_device_reason, sm90_accepts, run_cuda_sm90});
  first.push_back({"cuda_sm80_mma", DeviceType::cuda, core::cuda::any_device_reason, mma_accepts,
                   run_cuda_mma});
  first.push_back({"cuda_sm80", DeviceType::cuda, core::cuda::any_device_reason,
                   core::cuda_capability_at_least<80, BmmParams>, run_cuda});
#endif
  first.push_back({"cpu_avx2", DeviceType::cpu, core::avx2_fma_reason, core::accept_all<BmmParams>,
                   run_cpu_avx2});
  return core::with_cpu_impls<BmmParams>(std::move(first), run_cpu, reference);
}
}  // namespace

const std::vector<core::Impl<BmmParams>>& bmm_impls(BmmMode mode) {
  static const auto jd = list(jagged_dense_bmm_reference);
  static const auto jj = list(jagged_jagged_bmm_reference);
  return mode == BmmMode::jagged_dense ? jd : jj;
}

namespace {
constexpr const char* kJd = "jagged_dense_bmm";
constexpr const char* kJdBwd = "jagged_dense_bmm_bwd";
constexpr const char* kJj = "jagged_jagged_bmm";
constexpr const char* kJjBwd = "jagged_jagged_bmm_bwd";

bool is_float(DType t) {
  return t == DType::fp64 || t == DType::fp32 || t == DType::fp16 || t == DType::bf16;
}

// A jagged operand: [total_L, W], floating, last stride 1 (row stride free).
Status check_jagged(const char* op, const char* name, const TensorView& t) {
  RECOPS_CHECK(is_float(t.dtype), op, ": ", name, " must be fp64, fp32, fp16 or bf16, got ",
               dtype_name(t.dtype));
  RECOPS_CHECK(t.ndim == 2, op, ": ", name, " must be 2-D [total_L, width], got ", describe(t));
  RECOPS_CHECK(t.inner_contiguous(1) && t.strides[0] >= 0, op, ": ", name,
               "'s last dim must have stride 1 and its row stride must be >= 0; got ", describe(t));
  return Status::Ok();
}

Status check_offsets(const char* op, const char* name, const TensorView& t,
                     const TensorView& seq_offsets, int64_t max_seq_len) {
  RECOPS_RETURN_IF_ERROR(core::check_offsets_meta(op, "seq_offsets", seq_offsets));
  RECOPS_CHECK(max_seq_len >= 0, op, ": max_seq_len=", max_seq_len, " must be >= 0");
  return core::check_same_device(op, name, t, "seq_offsets", seq_offsets);
}

Status check_same(const char* op, const char* a_name, const TensorView& a, const char* b_name,
                  const TensorView& b) {
  RECOPS_CHECK(a.dtype == b.dtype, op, ": ", b_name, " (", dtype_name(b.dtype),
               ") must have the dtype of ", a_name, " (", dtype_name(a.dtype), ")");
  return core::check_same_device(op, a_name, a, b_name, b);
}

// out: contiguous, `shape`, dtype `t`, on `like`'s device.
Status check_out(const char* op, const char* name, const TensorView& out, const Shape& shape,
                 DType t, const TensorView& like) {
  RECOPS_CHECK(out.shape() == shape && out.dtype == t && out.is_contiguous(), op, ": ", name,
               " must be contiguous ", shape_str(shape), " ", dtype_name(t), "; got ",
               describe(out));
  return core::check_same_device(op, "x_values", like, name, out);
}

Status jd_shape(const char* op, const JaggedDenseBmmArgs& a, Shape* s) {
  RECOPS_RETURN_IF_ERROR(check_jagged(op, "x_values", a.x_values));
  RECOPS_RETURN_IF_ERROR(check_offsets(op, "x_values", a.x_values, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_same(op, "x_values", a.x_values, "y", a.y));
  const int64_t B = a.seq_offsets.sizes[0] - 1, K = a.x_values.sizes[1];
  RECOPS_CHECK(a.y.ndim == 3 && a.y.sizes[0] == B && a.y.sizes[1] == K, op,
               ": y must be [B, K, N] = [", B, ", ", K,
               ", N] (B from seq_offsets, K = ", "x_values.size(1)); got ", describe(a.y));
  RECOPS_CHECK(a.y.strides[0] >= 0 && a.y.strides[1] >= 0 && a.y.strides[2] >= 0, op,
               ": y's strides must be >= 0; got ", describe(a.y));
  *s = Shape{a.x_values.sizes[0], a.y.sizes[2]};
  return Status::Ok();
}

Status jj_shape(const char* op, const JaggedJaggedBmmArgs& a, Shape* s) {
  RECOPS_RETURN_IF_ERROR(check_jagged(op, "x_values", a.x_values));
  RECOPS_RETURN_IF_ERROR(check_jagged(op, "y_values", a.y_values));
  RECOPS_RETURN_IF_ERROR(check_offsets(op, "x_values", a.x_values, a.seq_offsets, a.max_seq_len));
  RECOPS_RETURN_IF_ERROR(check_same(op, "x_values", a.x_values, "y_values", a.y_values));
  RECOPS_CHECK(a.y_values.sizes[0] == a.x_values.sizes[0], op, ": y_values ", describe(a.y_values),
               " must have x_values' rows (total_L = ", a.x_values.sizes[0], ")");
  *s = Shape{a.seq_offsets.sizes[0] - 1, a.x_values.sizes[1], a.y_values.sizes[1]};
  return Status::Ok();
}

BmmParams common_params(const TensorView& x, const TensorView& seq_offsets, int64_t max_seq_len,
                        bool allow_tf32, const TensorView& z) {
  BmmParams p;
  p.x = x.data;
  p.x_row_stride = x.strides[0];
  p.z = z.data;
  p.dtype = x.dtype;
  p.seq_offsets = seq_offsets.data;
  p.offsets_int64 = seq_offsets.dtype == DType::int64;
  p.offsets_stride = seq_offsets.strides[0];
  p.B = seq_offsets.sizes[0] - 1;
  p.total_L = x.sizes[0];
  p.max_L = max_seq_len;
  p.allow_tf32 = allow_tf32;
  p.device_index = x.device.index;
  return p;
}

Status dispatch(const char* op, const BmmParams& p, const TensorView& seq_offsets,
                const TensorView& z, const Context& ctx) {
  RECOPS_RETURN_IF_ERROR(core::validate_offsets(op, "seq_offsets", seq_offsets, p.total_L,
                                                "x_values.size(0) (total_L)", ctx));
  if (z.numel() == 0) return Status::Ok();  // nothing to write: launch nothing
  if (p.plain) {
    RECOPS_CHECK(z.device.is_cpu(), op, ": the plain baseline runs on CPU tensors only");
    return p.mode == BmmMode::jagged_dense ? jagged_dense_bmm_reference(p, ctx)
                                           : jagged_jagged_bmm_reference(p, ctx);
  }
  return core::dispatch(op, bmm_impls(p.mode), z.device.type, p, ctx);
}

Status jd_run(const char* op, const JaggedDenseBmmArgs& a, const TensorView& z, bool plain,
              const Context& ctx) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jd_shape(op, a, &s));
  RECOPS_RETURN_IF_ERROR(check_out(op, "z", z, s, a.x_values.dtype, a.x_values));
  BmmParams p = common_params(a.x_values, a.seq_offsets, a.max_seq_len, a.allow_tf32, z);
  p.mode = BmmMode::jagged_dense;
  p.y = a.y.data;
  p.y_sb = a.y.strides[0], p.y_sk = a.y.strides[1], p.y_sn = a.y.strides[2];
  p.K = a.x_values.sizes[1];
  p.N = a.y.sizes[2];
  p.plain = plain;
  return dispatch(op, p, a.seq_offsets, z, ctx);
}

Status jj_run(const char* op, const JaggedJaggedBmmArgs& a, const TensorView& z, bool plain,
              const Context& ctx) {
  Shape s;
  RECOPS_RETURN_IF_ERROR(jj_shape(op, a, &s));
  RECOPS_RETURN_IF_ERROR(check_out(op, "z", z, s, a.x_values.dtype, a.x_values));
  BmmParams p = common_params(a.x_values, a.seq_offsets, a.max_seq_len, a.allow_tf32, z);
  p.mode = BmmMode::jagged_jagged;
  p.y = a.y_values.data;
  p.y_sk = a.y_values.strides[0], p.y_sn = 1;
  p.M = a.x_values.sizes[1];
  p.N = a.y_values.sizes[1];
  p.plain = plain;
  if (z.device.type == DeviceType::cuda) {
    const int64_t bytes = bmm_split_chunks(&p);
    RECOPS_CHECK(bytes == 0 || (ctx.workspace && ctx.workspace_bytes >= static_cast<size_t>(bytes)),
                 op, ": needs a workspace of ", bytes, " bytes on the tensors' device for the ",
                 "split of long sequences (jagged_jagged_bmm_workspace_bytes); got ",
                 ctx.workspace_bytes);
    p.workspace = ctx.workspace;
  }
  return dispatch(op, p, a.seq_offsets, z, ctx);
}

// The CUDA split's workspace of jagged_jagged_bmm(x, y, seq_offsets): 0 on the CPU and for
// arguments the entry refuses (it reports them).
size_t jj_workspace(const TensorView& x, const TensorView& y, const TensorView& seq_offsets,
                    int64_t max_seq_len) {
  if (x.device.type != DeviceType::cuda || x.ndim != 2 || y.ndim != 2 || seq_offsets.ndim != 1 ||
      seq_offsets.sizes[0] < 1 || max_seq_len < 0)
    return 0;
  BmmParams p;
  p.mode = BmmMode::jagged_jagged;
  p.dtype = x.dtype;
  p.B = seq_offsets.sizes[0] - 1;
  p.total_L = x.sizes[0];
  p.max_L = max_seq_len;
  p.M = x.sizes[1];
  p.N = y.sizes[1];
  return static_cast<size_t>(bmm_split_chunks(&p));
}

// [B, R, C] -> [B, C, R]: a stride swap.
TensorView transposed(TensorView t) {
  std::swap(t.sizes[1], t.sizes[2]);
  std::swap(t.strides[1], t.strides[2]);
  return t;
}

// jagged_dense_bmm_bwd: grad [total_L, N] like z; dx = grad · y^T, dy = sum x^T grad.
Status jd_bwd(const JaggedDenseBmmBwdArgs& a, const TensorView& dx, const TensorView& dy,
              bool plain, const Context& ctx) {
  Shape z;
  RECOPS_RETURN_IF_ERROR(jd_shape(kJdBwd, {a.x_values, a.seq_offsets, a.y, a.max_seq_len}, &z));
  RECOPS_RETURN_IF_ERROR(check_jagged(kJdBwd, "grad", a.grad));
  RECOPS_RETURN_IF_ERROR(check_same(kJdBwd, "x_values", a.x_values, "grad", a.grad));
  RECOPS_CHECK(a.grad.shape() == z, kJdBwd, ": grad must be z's shape ", shape_str(z), "; got ",
               describe(a.grad));
  RECOPS_RETURN_IF_ERROR(
      check_out(kJdBwd, "dx", dx, a.x_values.shape(), a.x_values.dtype, a.x_values));
  RECOPS_RETURN_IF_ERROR(check_out(kJdBwd, "dy", dy, a.y.shape(), a.y.dtype, a.x_values));
  RECOPS_RETURN_IF_ERROR(
      jd_run(kJdBwd, {a.grad, a.seq_offsets, transposed(a.y), a.max_seq_len, a.allow_tf32}, dx,
             plain, ctx));
  return jj_run(kJdBwd, {a.x_values, a.grad, a.seq_offsets, a.max_seq_len, a.allow_tf32}, dy, plain,
                ctx);
}

// jagged_jagged_bmm_bwd: grad [B, M, N] like z; dx(b,l) = y(b,l) grad[b]^T, dy(b,l) = x(b,l)
// grad[b].
Status jj_bwd(const JaggedJaggedBmmBwdArgs& a, const TensorView& dx, const TensorView& dy,
              bool plain, const Context& ctx) {
  Shape z;
  RECOPS_RETURN_IF_ERROR(
      jj_shape(kJjBwd, {a.x_values, a.y_values, a.seq_offsets, a.max_seq_len}, &z));
  RECOPS_RETURN_IF_ERROR(check_same(kJjBwd, "x_values", a.x_values, "grad", a.grad));
  RECOPS_CHECK(a.grad.shape() == z, kJjBwd, ": grad must be z's shape ", shape_str(z), "; got ",
               describe(a.grad));
  RECOPS_RETURN_IF_ERROR(
      check_out(kJjBwd, "dx", dx, a.x_values.shape(), a.x_values.dtype, a.x_values));
  RECOPS_RETURN_IF_ERROR(
      check_out(kJjBwd, "dy", dy, a.y_values.shape(), a.y_values.dtype, a.x_values));
  RECOPS_RETURN_IF_ERROR(
      jd_run(kJjBwd, {a.y_values, a.seq_offsets, transposed(a.grad), a.max_seq_len, a.allow_tf32},
             dx, plain, ctx));
  return jd_run(kJjBwd, {a.x_values, a.seq_offsets, a.grad, a.max_seq_len, a.allow_tf32}, dy, plain,
                ctx);
}
}  // namespace
}  // namespace recops::ops::bmm

namespace recops {
using namespace ops::bmm;

Status jagged_dense_bmm_shape(const JaggedDenseBmmArgs& a, Shape* z_shape) {
  return jd_shape(kJd, a, z_shape);
}
Status jagged_dense_bmm(const JaggedDenseBmmArgs& a, const TensorView& z, const Context& ctx) {
  return jd_run(kJd, a, z, false, ctx);
}
Status jagged_dense_bmm_bwd(const JaggedDenseBmmBwdArgs& a, const TensorView& dx,
                            const TensorView& dy, const Context& ctx) {
  return jd_bwd(a, dx, dy, false, ctx);
}
Status jagged_jagged_bmm_shape(const JaggedJaggedBmmArgs& a, Shape* z_shape) {
  return jj_shape(kJj, a, z_shape);
}
size_t jagged_jagged_bmm_workspace_bytes(const JaggedJaggedBmmArgs& a) {
  return jj_workspace(a.x_values, a.y_values, a.seq_offsets, a.max_seq_len);
}
size_t jagged_dense_bmm_bwd_workspace_bytes(const JaggedDenseBmmBwdArgs& a) {
  return jj_workspace(a.x_values, a.grad, a.seq_offsets, a.max_seq_len);
}
Status jagged_jagged_bmm(const JaggedJaggedBmmArgs& a, const TensorView& z, const Context& ctx) {
  return jj_run(kJj, a, z, false, ctx);
}
Status jagged_jagged_bmm_bwd(const JaggedJaggedBmmBwdArgs& a, const TensorView& dx,
                             const TensorView& dy, const Context& ctx) {
  return jj_bwd(a, dx, dy, false, ctx);
}

Status jagged_dense_bmm_plain(const JaggedDenseBmmArgs& a, const TensorView& z) {
  return jd_run(kJd, a, z, true, {});
}
Status jagged_dense_bmm_bwd_plain(const JaggedDenseBmmBwdArgs& a, const TensorView& dx,
                                  const TensorView& dy) {
  return jd_bwd(a, dx, dy, true, {});
}
Status jagged_jagged_bmm_plain(const JaggedJaggedBmmArgs& a, const TensorView& z) {
  return jj_run(kJj, a, z, true, {});
}
Status jagged_jagged_bmm_bwd_plain(const JaggedJaggedBmmBwdArgs& a, const TensorView& dx,
                                   const TensorView& dy) {
  return jj_bwd(a, dx, dy, true, {});
}

}  // namespace recops
