// core/cuda/bits.cuh: device helpers for data-movement kernels that move bits, not values.
//
// A kernel that only copies or fills elements does not care about the dtype, only about the
// size of the unit it moves. These helpers pick the widest unit (16, 8, 4, 2 or 1 bytes) that every
// pointer, row width and stride of a call allows, build a fill pattern of that width from an
// element's bits, and read jagged offsets clamped into [0, total_L] (jagged_ops.md §1.2: corrupted
// offsets must never lead to an out-of-bounds access).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>

#include "recops/status.h"

namespace recops::core::cuda {

// The bit containers of each unit width.
template <int kBytes>
struct UnitOf;
template <>
struct UnitOf<16> {
  using type = uint4;
};
template <>
struct UnitOf<8> {
  using type = uint2;
};
template <>
struct UnitOf<4> {
  using type = unsigned int;
};
template <>
struct UnitOf<2> {
  using type = unsigned short;
};
template <>
struct UnitOf<1> {
  using type = unsigned char;
};
template <int kBytes>
using Unit = typename UnitOf<kBytes>::type;

// Widest unit width in {16, 8, 4, 2, 1}, not below elem_size, that divides every byte quantity
// given (pointer values, row widths, strides in bytes). elem_size is a power of two <= 8.
inline int pick_unit_bytes(int64_t elem_size, std::initializer_list<uint64_t> byte_quantities) {
  for (int w = 16; w > elem_size; w /= 2) {
    bool ok = true;
    for (uint64_t q : byte_quantities) ok = ok && (q % static_cast<uint64_t>(w) == 0);
    if (ok) return w;
  }
  return static_cast<int>(elem_size);
}

// The row-copy kernels' instantiations: calls f(integral_constant<int, kBytes>, integral_constant<
// int, kRowsPerThread>) for the unit width `unit` (16, 8, 4, 2 or 1 bytes) and 8 rows per thread
// when rows_per_thread is 8, else 4.
template <class F>
Status with_row_copy_instance(const char* op, int unit, int rows_per_thread, F&& f) {
  auto rows = [&](auto bytes) -> Status {
    if (rows_per_thread == 8) return f(bytes, std::integral_constant<int, 8>{});
    return f(bytes, std::integral_constant<int, 4>{});
  };
  switch (unit) {
    case 16: return rows(std::integral_constant<int, 16>{});
    case 8: return rows(std::integral_constant<int, 8>{});
    case 4: return rows(std::integral_constant<int, 4>{});
    case 2: return rows(std::integral_constant<int, 2>{});
    case 1: return rows(std::integral_constant<int, 1>{});
  }
  return Status(StatusCode::internal,
                detail::cat(op, ": no unit width ", unit, " (expected 1, 2, 4, 8 or 16 bytes)"));
}

// A unit of kBytes holding the element bits `elem_bits` (low elem_size bytes, little-endian)
// repeated; kBytes is a multiple of elem_size.
template <int kBytes>
inline Unit<kBytes> fill_pattern(uint64_t elem_bits, int64_t elem_size) {
  unsigned char bytes[16];
  for (int i = 0; i < 16; ++i)
    bytes[i] = static_cast<unsigned char>(elem_bits >> (8 * (i % elem_size)));
  Unit<kBytes> u;
  std::memcpy(&u, bytes, kBytes);
  return u;
}

// Streaming (evict-first) loads and stores of one unit: the conversions touch each byte once.
__device__ __forceinline__ uint4 load_stream(const uint4* p) {
  return __ldcs(p);
}
__device__ __forceinline__ uint2 load_stream(const uint2* p) {
  return __ldcs(p);
}
__device__ __forceinline__ unsigned int load_stream(const unsigned int* p) {
  return __ldcs(p);
}
__device__ __forceinline__ unsigned short load_stream(const unsigned short* p) {
  return __ldcs(p);
}
__device__ __forceinline__ unsigned char load_stream(const unsigned char* p) {
  return __ldcs(p);
}
__device__ __forceinline__ void store_stream(uint4* p, uint4 v) {
  __stcs(p, v);
}
__device__ __forceinline__ void store_stream(uint2* p, uint2 v) {
  __stcs(p, v);
}
__device__ __forceinline__ void store_stream(unsigned int* p, unsigned int v) {
  __stcs(p, v);
}
__device__ __forceinline__ void store_stream(unsigned short* p, unsigned short v) {
  __stcs(p, v);
}
__device__ __forceinline__ void store_stream(unsigned char* p, unsigned char v) {
  __stcs(p, v);
}

// seq_offsets[i] (int32 or int64, element stride `stride`) clamped into [0, total_L].
struct ClampedOffsets {
  const void* data;
  int64_t stride;
  int64_t total_L;
  bool is_int64;

  __device__ __forceinline__ int64_t operator()(int64_t i) const {
    const int64_t k = i * stride;
    const int64_t raw = is_int64 ? __ldg(static_cast<const long long*>(data) + k)
                                 : static_cast<int64_t>(__ldg(static_cast<const int*>(data) + k));
    return raw < 0 ? 0 : (raw > total_L ? total_L : raw);
  }
};

}  // namespace recops::core::cuda
