// jagged/jagged2_softmax/cuda/tiles.h: the launch configuration (architecture.md habit 4).
// Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::jagged2_softmax_ns {

inline constexpr int kThreads = 256;           // 8 warps a CTA, one line each at a time
inline constexpr long long kMaxBlocks = 8192;  // grid-stride over samples beyond this

}  // namespace recops::ops::jagged2_softmax_ns
