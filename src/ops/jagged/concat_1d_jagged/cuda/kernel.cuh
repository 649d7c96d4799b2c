// jagged/concat_1d_jagged/cuda/kernel.cuh: the device code. One kernel for the three destinations
// (forward: values; backward: grad_a, grad_b). It walks the destination flat, one unit of V
// elements a thread (V * elem = 16 bytes when the destination is 16-byte aligned, else V = 1),
// a block a tile of kThreads units (grid-stride over tiles). Per tile, two threads binary-search
// the samples holding the tile's first and last element; each thread then searches only that
// range for its unit's first element and walks on (re-searching the range when a sample ends).
// A unit inside one run of stride 1 whose source is 16-byte aligned moves with one 16-byte load;
// otherwise its elements are gathered one by one (coalesced across the warp) and stored as one
// unit.
//
// Offsets are read clamped into [0, T] (core::cuda::ClampedOffsets) and lengths clamped at 0, so
// invalid offsets (CUDA with validation off, SECURITY.md) never address outside a tensor: every
// source index is below its part's end by construction, and a destination element that no sample
// covers (only possible with invalid offsets) is written as zero bits.
#pragma once

#include <cstdint>

#include "core/cuda/bits.cuh"
#include "ops/jagged/concat_1d_jagged/cuda/tiles.h"

namespace recops::ops::concat_1d_jagged_ns::dev {

// One part as the kernel reads it. Element n of sample b:
//   jagged (S < 0): data + (start_b + n) * stride, start_b = offsets[b] (clamped to [0, total])
//   dense (S >= 0): data + b * batch_stride + n * stride, start_b = b * S
struct PartArgs {
  const char* data;  // forward source (unused by the backward)
  core::cuda::ClampedOffsets offsets;
  int64_t stride;
  int64_t batch_stride;
  int64_t S;
};

struct Args {
  PartArgs a, b;
  const char* grad;  // backward source: [T_A + T_B], element stride grad_stride
  int64_t grad_stride;
  char* dst;          // the destination (contiguous): out, grad_a or grad_b
  int64_t n;          // its elements
  void* out_offsets;  // forward only: [B + 1] (nullptr in the backward)
  bool offsets_int64;
  int64_t B;
  int mode;  // 0: forward (dst = values), 1: grad_a, 2: grad_b
};

__device__ __forceinline__ int64_t part_start(const PartArgs& x, int64_t b) {
  return x.S >= 0 ? b * x.S : x.offsets(b);
}

// First destination element of sample b (b in [0, B]).
__device__ __forceinline__ int64_t dst_start(const Args& a, int64_t b) {
  if (a.mode == 1) return part_start(a.a, b);
  if (a.mode == 2) return part_start(a.b, b);
  return part_start(a.a, b) + part_start(a.b, b);
}

// The last sample in [lo, hi] whose first destination element is <= e (lo when none is); -1 when
// the batch is empty.
__device__ __forceinline__ int64_t find_sample(const Args& a, int64_t e, int64_t lo, int64_t hi) {
  if (a.B <= 0) return -1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (dst_start(a, mid) <= e)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

struct Sample {
  int64_t b;     // -1: none
  int64_t dst0;  // first destination element
  int64_t pa, la, pb, lb;
};

__device__ __forceinline__ Sample load_sample(const Args& a, int64_t b) {
  Sample s{b, 0, 0, 0, 0, 0};
  if (b < 0) return s;
  s.pa = part_start(a.a, b);
  s.pb = part_start(a.b, b);
  const int64_t la = part_start(a.a, b + 1) - s.pa, lb = part_start(a.b, b + 1) - s.pb;
  s.la = la < 0 ? 0 : la;
  s.lb = lb < 0 ? 0 : lb;
  s.dst0 = a.mode == 1 ? s.pa : (a.mode == 2 ? s.pb : s.pa + s.pb);
  return s;
}

__device__ __forceinline__ int64_t sample_len(const Args& a, const Sample& s) {
  return a.mode == 1 ? s.la : (a.mode == 2 ? s.lb : s.la + s.lb);
}

// A run of source elements: src (nullptr: zeros), element stride, elements left in the run
// (counting the one at src).
struct Run {
  const char* src;
  int64_t stride;
  int64_t left;
};

template <int kElem>
__device__ __forceinline__ Run part_run(const PartArgs& x, const Sample& s, int64_t start,
                                        int64_t n, int64_t len) {
  const int64_t idx = x.S < 0 ? (start + n) * x.stride : s.b * x.batch_stride + n * x.stride;
  return Run{x.data + idx * kElem, x.stride, len - n};
}

// The run holding element n of sample s in the destination.
template <int kElem>
__device__ __forceinline__ Run run_at(const Args& a, const Sample& s, int64_t n) {
  if (s.b < 0 || n < 0 || n >= sample_len(a, s)) return Run{nullptr, 0, 1};
  if (a.mode == 0) {
    if (n < s.la) return part_run<kElem>(a.a, s, s.pa, n, s.la);
    return part_run<kElem>(a.b, s, s.pb, n - s.la, s.lb);
  }
  // backward: grad element (out position of sample b) + n, part B after part A's la elements
  const int64_t o = s.pa + s.pb + n + (a.mode == 2 ? s.la : 0);
  return Run{a.grad + o * a.grad_stride * kElem, a.grad_stride, (a.mode == 1 ? s.la : s.lb) - n};
}

template <int kUnit, int kElem>
__global__ void __launch_bounds__(kThreads) concat_1d_kernel(Args a) {
  using U = core::cuda::Unit<kUnit>;
  using E = core::cuda::Unit<kElem>;
  constexpr int V = kUnit / kElem;

  // Forward: the output offsets, o_b = p_b + q_b (clamped parts).
  if (a.mode == 0) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b <= a.B;
         b += stride) {
      const int64_t o = dst_start(a, b);
      if (a.offsets_int64)
        static_cast<int64_t*>(a.out_offsets)[b] = o;
      else
        static_cast<int32_t*>(a.out_offsets)[b] = static_cast<int32_t>(o);
    }
  }

  __shared__ int64_t s_range[2];
  const int64_t tile = int64_t{kThreads} * V;
  const int64_t tiles = (a.n + tile - 1) / tile;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t t0 = t * tile;
    const int64_t t1 = (t0 + tile < a.n ? t0 + tile : a.n) - 1;
    if (threadIdx.x == 0) s_range[0] = find_sample(a, t0, 0, a.B - 1);
    if (threadIdx.x == 32) s_range[1] = find_sample(a, t1, 0, a.B - 1);
    __syncthreads();
    const int64_t lo = s_range[0];
    const int64_t hi = s_range[1] > lo ? s_range[1] : lo;  // hi < lo only for invalid offsets
    __syncthreads();                                       // s_range is rewritten by the next tile

    const int64_t e0 = t0 + static_cast<int64_t>(threadIdx.x) * V;
    if (e0 >= a.n) continue;
    Sample s = load_sample(a, find_sample(a, e0, lo, hi));
    int64_t n = e0 - s.dst0;
    Run r = run_at<kElem>(a, s, n);
    const int64_t rest = a.n - e0;
    const int cnt = rest < V ? static_cast<int>(rest) : V;
    if constexpr (V > 1) {
      if (cnt == V && r.src != nullptr && r.stride == 1 && r.left >= V &&
          reinterpret_cast<uintptr_t>(r.src) % kUnit == 0) {
        core::cuda::store_stream(reinterpret_cast<U*>(a.dst + e0 * kElem),
                                 core::cuda::load_stream(reinterpret_cast<const U*>(r.src)));
        continue;
      }
    }
    union {
      U u;
      E e[V];
    } buf;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (k >= cnt) break;
      if (k > 0) {
        ++n;
        if (r.left > 1) {
          r.src += r.stride * kElem;
          --r.left;
        } else {
          if (n >= sample_len(a, s) && s.b >= 0) {  // the sample ended: find the next one
            const int64_t e = e0 + k;
            s = load_sample(a, find_sample(a, e, s.b + 1 <= hi ? s.b + 1 : hi, hi));
            n = e - s.dst0;
          }
          r = run_at<kElem>(a, s, n);
        }
      }
      buf.e[k] =
          r.src != nullptr ? core::cuda::load_stream(reinterpret_cast<const E*>(r.src)) : E{};
    }
    if (cnt == V) {
      core::cuda::store_stream(reinterpret_cast<U*>(a.dst + e0 * kElem), buf.u);
    } else {
      E* d = reinterpret_cast<E*>(a.dst + e0 * kElem);
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (k < cnt) core::cuda::store_stream(d + k, buf.e[k]);
    }
  }
}

}  // namespace recops::ops::concat_1d_jagged_ns::dev
