// hstu_attn/cuda/tiles.h: the launch configuration of every hstu_attn CUDA kernel (architecture.md
// habit 4): tile sizes, pipeline stages, threads, register splits. The kernels keep their template
// parameters and their short local names (sm90f::kBM, kFaD, ...); the values come from here, each
// with what chose it. "NOTES.md" is bench/results/h200/NOTES.md (by section date and title),
// "README" the op's README.md; "not recorded" means no measurement of that choice was kept.
// Plain constexpr, includable from host code.
#pragma once

namespace recops::ops::hstu_cuda::tiles {

// ---- cuda_sm90 forward (fwd_sm90.cuh) ----------------------------------------------------------

// Query rows per CTA: two consumer warpgroups of 64 rows (the M of wgmma m64nNk16), FA3's shape;
// other sizes not tried: not recorded.
inline constexpr int kSm90FwdRows = 128;
// One producer and two consumer warpgroups (NOTES.md 2026-11-30, the Hopper forward).
inline constexpr int kSm90FwdThreads = 384;
// setmaxnreg split of the 168 registers a thread has at entry (384 threads, one CTA per SM): the
// producer gives its registers to the consumers, (24 + 2 x 240) x 128 = 64512 of the SM's 65536;
// d = 128 runs without spill (NOTES.md 2026-11-30); other splits: not recorded.
inline constexpr int kSm90FwdProducerRegs = 24;
inline constexpr int kSm90FwdConsumerRegs = 240;

// The K/V tiles of head size d (d = dv).
struct Sm90FwdTile {
  int keys;    // keys per K and V tile (kBN)
  int stages;  // K/V stages in the shared-memory ring
};
// Shared memory: Q (128 x d) + stages x K and V (keys x d each), 2-byte elements, + 1 KiB of
// alignment slack, within the 227 KiB of one sm_90 CTA (NOTES.md 2026-11-30, the Hopper forward):
// - d = 64: 128 keys, 4 stages (Q 16 KiB + 4 x 32 KiB; 23344ab); 4 against 3 stages: not recorded;
// - d = 128: 128 keys, 3 stages (Q 32 KiB + 3 x 64 KiB; a fourth does not fit): on the H200 at
//   B=32 S=4096 H=4 with 256 targets, 1.29-1.36 ms with two stages, 0.95 ms with three (9575c5a);
// - d = 256: 64 keys, 2 stages (Q 64 KiB + 2 x 64 KiB = 192 KiB; three do not fit; 23344ab).
constexpr Sm90FwdTile sm90_fwd_tile(int d) {
  return d == 256 ? Sm90FwdTile{64, 2} : d == 64 ? Sm90FwdTile{128, 4} : Sm90FwdTile{128, 3};
}

// Work chunks of (sequence, head) pairs whose K and V fit in 1 / kSm90FwdL2Part of L2: on the
// H200, L2 hit rate 28% -> 85% and the forward 1.91 -> 1.59 ms against pair-major order (38fa20f,
// NOTES.md 2026-11-30); other fractions: not recorded.
inline constexpr int kSm90FwdL2Part = 3;

// ---- cuda_sm90 backward (bwd_sm90.cuh) ---------------------------------------------------------

// Two warpgroups per CTA in both kernels (load_rows' fixed trip count assumes 256 threads).
inline constexpr int kSm90BwdThreads = 256;
// Resident rows per CTA (keys of the key kernel, query rows of the query kernel), 64 per
// warpgroup: at d = 128 the key kernel's two 64 x 128 accumulators take 255 registers with 8 bytes
// of spill, 131 KiB of shared memory, one CTA per SM (NOTES.md 2026-11-30, the Hopper backward);
// other sizes: not recorded.
inline constexpr int kSm90BwdResidentRows = 128;
// Rows of the streamed tiles (query tiles of the key kernel, key tiles of the query kernel), two
// stages; the SS products are m64n64k16 (NOTES.md 2026-11-30); other sizes: not recorded.
inline constexpr int kSm90BwdStreamedRows = 64;

// ---- cuda_sm80_fa (fwd_fa.cuh, bwd_fa.cuh) -----------------------------------------------------

// Largest d and dv: O (forward) and dK, dV (backward) stay in registers as kSm80FaMaxHead / 8
// n-tiles, 255 registers a thread at 128 (NOTES.md 2026-11-29, the sm_80 kernels).
inline constexpr int kSm80FaMaxHead = 128;
// Four warps a block (forward: 16 kM query rows each; backward: 16 keys or query rows each).
inline constexpr int kSm80FaThreads = 128;
// __launch_bounds__ minimum blocks per SM: 2 at 255 registers (forward 69.6 KB of shared memory,
// backward key kernel 107 KB, query kernel 104 KB; NOTES.md 2026-11-29, the sm_80 kernels).
inline constexpr int kSm80FaBlocksPerSm = 2;
// The forward's m16 fragments per warp (kM = 2: 32 query rows a warp, 128 a block, 32-key tiles)
// is a template argument set in cuda/instances.json, whose file names carry it (variant fa32):
// 8.73 ms with kM = 1 (7f5a103) -> 6.51 ms on the H200 at B=32 S=4096 H=4 with 256 targets
// (eb45aeda86b5, together with a new block order; NOTES.md 2026-11-29, the forward on the H200).
// Backward: keys per key-kernel block and query rows per streamed tile, query rows per
// query-kernel block and keys per streamed tile; other sizes: not recorded.
inline constexpr int kSm80FaBwdTile = 64;
// The backward's drab zero fill: threads per block, and the grid cap beyond which it strides;
// not recorded.
inline constexpr int kSm80FaDrabThreads = 256;
inline constexpr int kSm80FaDrabMaxBlocks = 8192;

// ---- cuda_sm80 (fwd.cuh, bwd.cuh) --------------------------------------------------------------

// Forward: keys per tile (8 n-tiles of the score strip); not recorded.
inline constexpr int kSm80KeyTile = 64;
// Threads of the largest block (4 warps of 16 rows, 32 threads per 16 rows): __launch_bounds__.
inline constexpr int kSm80MaxThreads = 128;
// Warps per block, tried in order until the block's shared memory fits the device (large heads
// in fp32 need fewer; NOTES.md 2026-11-29, the sm_80 kernels); not recorded.
inline constexpr int kSm80Warps[] = {4, 2, 1};
// Backward: the streamed side's tile (query rows per tile in the key pass, keys per tile in the
// query pass), tried in order under each warp count until the shared memory fits; not recorded.
inline constexpr int kSm80BwdStreamTiles[] = {64, 32, 16};
// The backward's drab zero fill: threads per block (a persistent grid); not recorded.
inline constexpr int kSm80DrabThreads = 256;

}  // namespace recops::ops::hstu_cuda::tiles
