// training/sort_chunks_by_idx/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Not tuned yet (no GPU measurement).
#pragma once

namespace recops::ops::sort_chunks_by_idx_ns {

// One row a block at a time: 256 threads move 4 KiB a step in 16-byte accesses (the spec's
// D = 4096 bf16 row is two steps).
inline constexpr int kThreads = 256;
inline constexpr long long kMaxBlocks = 8192;  // grid-stride over rows beyond this

}  // namespace recops::ops::sort_chunks_by_idx_ns
