// bench/experiments/wgmma.cuh: the Hopper wgmma pieces the experiments share (sm_90a only): the
// 128-byte swizzled tile layout, shared-memory matrix descriptors, the fences, and
// wgmma.mma_async m64n128k16 (bf16 in, fp32 accumulators) in its SS and RS forms.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace wg {

// Byte offset of element (r, c) of a tile whose rows are 64 bf16 (128 bytes), stored with the
// 128-byte swizzle: 8-row groups of 1024 bytes; the 16-byte chunk c / 8 of row r sits at chunk
// (c / 8) ^ (r % 8) of the row.
__host__ __device__ inline uint32_t sw128(int r, int c) {
  return static_cast<uint32_t>((r / 8) * 1024 + (r % 8) * 128 + (((c / 8) ^ (r % 8)) & 7) * 16 +
                               (c % 8) * 2);
}

// A shared-memory matrix descriptor: start address, leading and stride byte offsets (16-byte
// units), base offset 0 (tiles 1024-byte aligned), 128-byte swizzle (mode 1 in bits 62-63).
__device__ inline uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((saddr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= uint64_t{1} << 62;
  return d;
}

__device__ __forceinline__ void wg_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_wait0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The 64 fp32 accumulators of an m64n128 wgmma: their operand numbers (%0 .. %63) in the
// instruction text and their in/out operand list.
#define WG_ACC64_REGS                                                                          \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63"
#define WG_ACC64_OPERANDS(d)                                                                      \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),  \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),  \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),  \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),  \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// D (64 x 128, fp32) += A (64 x 16, shared memory, descriptor da) * B (descriptor db): the SS form.
template <int kTnspB>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_ACC64_REGS
      "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
      : WG_ACC64_OPERANDS(d)
      : "l"(da), "l"(db), "r"(scale_d), "n"(kTnspB));
}

// The RS form: A from registers (a[4]: the mma.sync m16n8k16 A fragment of this warp's 16 rows).
template <int kTnspB>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db,
                                         int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" WG_ACC64_REGS
      "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
      : WG_ACC64_OPERANDS(d)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTnspB));
}

__device__ __forceinline__ uint32_t pack2(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  return static_cast<uint32_t>(__bfloat16_as_ushort(lo)) |
         (static_cast<uint32_t>(__bfloat16_as_ushort(hi)) << 16);
}

}  // namespace wg
