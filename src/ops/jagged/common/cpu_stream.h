// ops/jagged/common/cpu_stream.h: non-temporal (streaming) stores for the jagged CPU paths that
// write a large output once and never read it back (the segment select ops, the conversions).
// A plain store first reads the line it fills (write-allocate); a streaming store does not. On
// the 2-core Zen 1 development VM an 8 MB select took 1.24 ms with plain stores, 0.84 ms
// streamed (memcpy 1.22 ms). Callers stream only outputs of kStreamTotal bytes or more, which
// outgrow the caches anyway (a smaller output stays cached for its consumer), and call
// stream_fence() once their last streamed store is done (streamed stores are weakly ordered).
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "recops/isa_ns.h"

namespace recops::ops::jagged_cpu {
// The ISA-named inline namespace (recops/isa_ns.h), as cpu_io.h.
inline namespace RECOPS_ISA_NS {

inline constexpr int64_t kStreamTotal = int64_t{4} << 20;

// dst[0, bytes) = src[0, bytes): plain copies up to dst's 16-byte boundary and after the last
// whole 16 bytes, streamed 16-byte stores between (src may be unaligned). Without SSE2, memcpy.
inline void stream_copy(void* dst, const void* src, int64_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
#if defined(__SSE2__)
  int64_t head = static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  head = head < bytes ? head : bytes;
  std::memcpy(d, s, static_cast<size_t>(head));
  int64_t i = head;
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  std::memcpy(d + i, s + i, static_cast<size_t>(bytes - i));
#else
  std::memcpy(d, s, static_cast<size_t>(bytes));
#endif
}

// dst[0, bytes) = 0, streamed as stream_copy.
inline void stream_zero(void* dst, int64_t bytes) {
  auto* d = static_cast<char*>(dst);
#if defined(__SSE2__)
  int64_t head = static_cast<int64_t>((16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  head = head < bytes ? head : bytes;
  std::memset(d, 0, static_cast<size_t>(head));
  int64_t i = head;
  const __m128i z = _mm_setzero_si128();
  for (; i + 16 <= bytes; i += 16) _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), z);
  std::memset(d + i, 0, static_cast<size_t>(bytes - i));
#else
  std::memset(d, 0, static_cast<size_t>(bytes));
#endif
}

// Orders this thread's streamed stores before what follows (the end of its parallel range).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace RECOPS_ISA_NS
}  // namespace recops::ops::jagged_cpu
