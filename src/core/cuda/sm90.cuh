// core/cuda/sm90.cuh: the Hopper (sm_90a) building blocks of the warp-specialised attention
// kernels: the 128-byte swizzled shared-memory tile layout, wgmma matrix descriptors and
// wgmma.mma_async m64n128k16 (bf16/fp16 in, fp32 accumulators; SS and RS forms), mbarriers, TMA
// tensor loads and register reallocation. Device code only; each wraps one PTX instruction (or a
// short fixed sequence) and adds nothing else. Every function is empty unless compiled for sm_90a
// (RECOPS_SM90A), so that the translation units that include it still build for sm_80; the
// host-side accept test refuses other devices (host code never reaches these on them).
//
// The tile layout (what TMA's 128-byte swizzle writes for a box 64 elements wide, and what the
// wgmma descriptors below read): a tile of R rows × 64 bf16/fp16 (128 bytes per row), rows in
// 8-row groups of 1024 bytes; the 16-byte chunk c of row r sits at chunk c ^ (r % 8). A row of
// 128 elements is two such atoms, R·128 bytes apart. Checked on the H200 with exact integers by
// bench/experiments/wgmma_probe.cu (K-major A and B; MN-major B with LBO = the atom stride).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900 && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define RECOPS_SM90A 1
#else
#define RECOPS_SM90A 0
#endif

namespace recops::core::cuda::sm90 {

// Byte offset of element (r, c), c < 64, in a swizzled atom (1024-byte aligned base).
__host__ __device__ constexpr uint32_t sw128(int r, int c) {
  return static_cast<uint32_t>((r / 8) * 1024 + (r % 8) * 128 + (((c / 8) ^ (r % 8)) & 7) * 16 +
                               (c % 8) * 2);
}

// A shared-memory matrix descriptor: start address, leading and stride byte offsets, base offset
// 0 (atoms 1024-byte aligned), 128-byte swizzle (mode 1 in bits 62-63).
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((saddr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= uint64_t{1} << 62;
  return d;
}

__device__ __forceinline__ void wg_fence() {
#if RECOPS_SM90A
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wg_commit() {
#if RECOPS_SM90A
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
// Waits until at most N committed wgmma groups of this warp are pending.
template <int N>
__device__ __forceinline__ void wg_wait() {
#if RECOPS_SM90A
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Orders this thread's generic-proxy shared-memory accesses before later async-proxy ones.
__device__ __forceinline__ void fence_proxy_async() {
#if RECOPS_SM90A
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Register reallocation between warpgroups (all warps of a warpgroup execute it).
template <int N>
__device__ __forceinline__ void regs_dealloc() {
#if RECOPS_SM90A
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}
template <int N>
__device__ __forceinline__ void regs_alloc() {
#if RECOPS_SM90A
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
#endif
}

// Named barrier `id` (1..15; 0 is __syncthreads) over `threads` threads.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
// Arrives on named barrier `id` without waiting (the producer side of a named_sync).
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- mbarriers -------------------------------------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
#if RECOPS_SM90A
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Makes initialised mbarriers visible to the async proxy (TMA); then __syncthreads.
__device__ __forceinline__ void mbar_fence_init() {
#if RECOPS_SM90A
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#if RECOPS_SM90A
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar)
               : "memory");
#endif
}
// Arrives and adds `bytes` to the transaction count the phase waits for (the TMA producer).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#if RECOPS_SM90A
  asm volatile(
      "{\n.reg .b64 st;\nmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n}\n" ::"r"(bar),
      "r"(bytes)
      : "memory");
#endif
}
// Blocks until the phase of parity `parity` has completed (a fresh barrier counts the phase of
// parity 1 as completed, so producers start by waiting on parity 1 of their "empty" barriers).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#if RECOPS_SM90A
  asm volatile(
      "{\n.reg .pred done;\nWAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
#endif
}

// ---- TMA ---------------------------------------------------------------------------------------

// A 3-D box of the tensor map `tmap` (a CUtensorMap in param/const/global memory) at coordinates
// (c0 innermost, c1, c2) into shared memory `dst`, completing bytes on mbarrier `bar`.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* tmap, uint32_t bar, int c0,
                                            int c1, int c2) {
#if RECOPS_SM90A
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(tmap)), "r"(bar), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_prefetch_desc(const void* tmap) {
#if RECOPS_SM90A
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(tmap)) : "memory");
#endif
}

// ---- wgmma m64n128k16, fp32 accumulators -------------------------------------------------------

// The 64 fp32 accumulators of an m64n128 wgmma: their operand numbers in the instruction text and
// their in/out operand list.
#define RECOPS_WG_ACC64_REGS                                                                   \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, " \
  "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, " \
  "%56, %57, %58, %59, %60, %61, %62, %63"
#define RECOPS_WG_ACC64_OPERANDS(d)                                                               \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]),  \
      "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]),  \
      "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),  \
      "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),  \
      "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])

// D (64 x 128) (+)= A (64 x 16, descriptor da; kTnspA = 1: MN-major A) * B (descriptor db;
// kTnspB = 1: MN-major B). The accumulators are overwritten when scale_d == 0. T: __nv_bfloat16
// or __half.
template <class T, int kTnspB, int kTnspA = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>);
#if RECOPS_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" RECOPS_WG_ACC64_REGS
        "}, %64, %65, p, 1, 1, %68, %67;\n}\n"
        : RECOPS_WG_ACC64_OPERANDS(d)
        : "l"(da), "l"(db), "r"(scale_d), "n"(kTnspB), "n"(kTnspA));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" RECOPS_WG_ACC64_REGS
        "}, %64, %65, p, 1, 1, %68, %67;\n}\n"
        : RECOPS_WG_ACC64_OPERANDS(d)
        : "l"(da), "l"(db), "r"(scale_d), "n"(kTnspB), "n"(kTnspA));
  }
#endif
}

// The RS form: A from registers (a[4]: the mma.sync m16n8k16 A fragment of this warp's 16 rows
// of the warpgroup's 64). The registers must not change until the wgmma has completed.
template <class T, int kTnspB>
__device__ __forceinline__ void wgmma_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db,
                                         int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>);
#if RECOPS_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {" RECOPS_WG_ACC64_REGS
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
        : RECOPS_WG_ACC64_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTnspB));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {" RECOPS_WG_ACC64_REGS
        "}, {%64, %65, %66, %67}, %68, p, 1, 1, %70;\n}\n"
        : RECOPS_WG_ACC64_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTnspB));
  }
#endif
}

// ---- wgmma m64n64k16 (the backward's 64 x 64 score tiles), fp32 accumulators ----------------

#define RECOPS_WG_ACC32_REGS                                                                   \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, " \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define RECOPS_WG_ACC32_OPERANDS(d)                                                               \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// D (64 x 64) (+)= A (64 x 16, descriptor da) * B (descriptor db), both K-major (SS form).
template <class T>
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db,
                                             int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>);
#if RECOPS_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" RECOPS_WG_ACC32_REGS
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : RECOPS_WG_ACC32_OPERANDS(d)
        : "l"(da), "l"(db), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" RECOPS_WG_ACC32_REGS
        "}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : RECOPS_WG_ACC32_OPERANDS(d)
        : "l"(da), "l"(db), "r"(scale_d));
  }
#endif
}

// The RS form of m64n64k16 (the forward's P V at d = 64): A from registers as in wgmma_rs, B by
// descriptor (kTnspB = 1: MN-major B).
template <class T, int kTnspB>
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db,
                                             int scale_d) {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>);
#if RECOPS_SM90A
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {" RECOPS_WG_ACC32_REGS
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
        : RECOPS_WG_ACC32_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTnspB));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {" RECOPS_WG_ACC32_REGS
        "}, {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"
        : RECOPS_WG_ACC32_OPERANDS(d)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d), "n"(kTnspB));
  }
#endif
}

}  // namespace recops::core::cuda::sm90
