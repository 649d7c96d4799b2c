// ops/jagged/common/cuda/select_tiles.h: the segment-select ops' launch configuration
// (architecture.md habit 4). Untuned: chosen by reasoning, and one measurement below.
#pragma once

namespace recops::ops::select_dev {

inline constexpr int kThreads = 256;           // 8 warps a block
inline constexpr long long kMaxBlocks = 8192;  // grid-stride beyond this (H200: 132 SMs)
// Mean elements per segment above which the forward copies go one warp per row rather than one
// warp per segment: on the H200 (2b63f67) a warp per segment made S5 (140472 segments of ~125 x
// 64) 8.6x faster forward and 4x backward, but S3 (1024 segments of ~400 x 256) 3.2x slower forward
// and 33x slower backward (too few warps, the longest segment a tail).
inline constexpr long long kSegmentElems = 32768;
// Backward: rows of grad_values per warp task (consecutive; a segment's searches are shared by
// its rows in the task).
inline constexpr long long kGradRows = 8;

}  // namespace recops::ops::select_dev
