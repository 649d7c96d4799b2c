// core/cuda/tma.cpp: cuTensorMapEncodeTiled through cudaGetDriverEntryPointByVersion.
#include "core/cuda/tma.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>

namespace recops::core::cuda {
namespace {

using EncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                 const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                 const cuuint32_t*, CUtensorMapInterleave, CUtensorMapSwizzle,
                                 CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

EncodeTiled encode_fn(std::string* why) {
  static std::once_flag once;
  static EncodeTiled fn = nullptr;
  static std::string err;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                           cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || p == nullptr) {
      (void)cudaGetLastError();
      err = std::string("the driver has no cuTensorMapEncodeTiled (") + cudaGetErrorString(e) + ")";
      return;
    }
    fn = reinterpret_cast<EncodeTiled>(p);
  });
  if (!fn) *why = err;
  return fn;
}

}  // namespace

Status make_tensor_map_3d_b16(TensorMap* map, const void* base, int64_t dim, int64_t heads,
                              int64_t rows, int64_t head_stride_bytes, int64_t row_stride_bytes,
                              int box_rows, const char* what) {
  static_assert(sizeof(TensorMap) == sizeof(CUtensorMap));
  std::string why;
  EncodeTiled fn = encode_fn(&why);
  if (!fn) return Status(StatusCode::internal, std::string(what) + ": " + why);
  // A map needs at least one row; an empty tensor is never read (callers launch nothing).
  const cuuint64_t size[3] = {static_cast<cuuint64_t>(dim), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(rows > 0 ? rows : 1)};
  const cuuint64_t stride[2] = {static_cast<cuuint64_t>(head_stride_bytes),
                                static_cast<cuuint64_t>(row_stride_bytes)};
  const cuuint32_t box[3] = {64, 1, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t elem_stride[3] = {1, 1, 1};
  // The map's element type is bf16 for fp16 tensors too: TMA copies bits, and the type only
  // sets the element size and the out-of-range fill (zeros either way).
  const CUresult r = fn(reinterpret_cast<CUtensorMap*>(map), CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3,
                        const_cast<void*>(base), size, stride, box, elem_stride,
                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                        CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return Status(StatusCode::invalid_argument,
                  std::string(what) + ": cuTensorMapEncodeTiled refused the layout (error " +
                      std::to_string(static_cast<int>(r)) +
                      "; the base and the row and head strides must be 16-byte aligned)");
  return Status::Ok();
}

}  // namespace recops::core::cuda
