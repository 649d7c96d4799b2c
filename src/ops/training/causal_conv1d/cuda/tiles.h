// training/causal_conv1d/cuda/tiles.h: the launch configuration, and the token chunks of the
// backward's dweight/dbias partials (also sized by the entry for the workspace). Not tuned yet:
// no H200 measurement has chosen these values.
#pragma once

#include <cstdint>

namespace recops::ops::causal_conv1d_ns {

inline constexpr int kThreads = 256;  // a memory-bound stencil: 8 warps a block
inline constexpr int kTile = 4;       // outputs (time steps) per thread in the forward
// Tokens (b, t) per partial of dweight and dbias; stage 2 adds the P partials in order.
inline constexpr int64_t kChunk = 1024;
inline int64_t partial_chunks(int64_t tokens) {
  return (tokens + kChunk - 1) / kChunk;
}

}  // namespace recops::ops::causal_conv1d_ns
