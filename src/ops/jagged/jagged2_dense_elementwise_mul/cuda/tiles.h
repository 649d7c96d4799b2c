// jagged/jagged2_dense_elementwise_mul/cuda/tiles.h: the launch configuration (architecture.md
// habit 4). Untuned: chosen by reasoning, not measured yet.
#pragma once

namespace recops::ops::jagged2_dense_elementwise_mul_ns {

inline constexpr int kThreads = 256;           // a memory-bound elementwise loop: 8 warps a CTA
inline constexpr long long kMaxBlocks = 8192;  // grid-stride over samples beyond this
}  // namespace recops::ops::jagged2_dense_elementwise_mul_ns
