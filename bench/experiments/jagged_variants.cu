// bench/experiments/jagged_variants.cu: kernel variants of the two jagged conversions timed side
// by side on one shape (default: issue 2's S3, B=1024 max_L=1024 D=256 bf16, skewed lengths as
// tools/recops/gen.cpp draws them), against a cudaMemcpy of the same bytes and of 1 GiB. A
// standalone experiment (not part of the library or its tests): it decides which variant the
// library kernels adopt. Every variant's output is checked against the library kernel's
// (poisoned before each checked run). Build and run on the GPU machine:
//   nvcc -O3 -std=c++20 -arch=sm_90a -Isrc -Iinclude bench/experiments/jagged_variants.cu -o
//   /tmp/jv /tmp/jv [B max_L D elem_bytes]
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ops/jagged/dense_to_jagged/cuda/kernels.cuh"
#include "ops/jagged/jagged_to_padded_dense/cuda/kernels.cuh"

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace cc = recops::core::cuda;

// The output of the next launch (the check points it at its reference buffer or at the
// candidate's; timing uses the candidate's).
static uint4* g_dst = nullptr;

// ---- variant kernels ---------------------------------------------------------------------------
// V2: units per lane fixed at compile time, every load of a thread issued before its first store
// (the library kernel's c-loop cannot hoist the next unit's loads above the stores: src and dst
// may alias as far as the compiler knows). kOrder: 0 grid-stride tiles, 1 contiguous tile ranges
// per block, 2 one block per tile (no loop).
template <int R, int UPL, int kOrder, bool kStream>
__global__ void __launch_bounds__(512)
    j2pd_v2(const uint4* __restrict__ values, uint4* __restrict__ out, cc::ClampedOffsets off,
            int64_t B, int64_t max_L, int64_t W, int64_t tile_rows, int64_t num_tiles,
            int lanes_log2) {
  const int lanes = 1 << lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> lanes_log2;
  int64_t t0 = blockIdx.x, t1 = num_tiles, step = gridDim.x;
  if (kOrder == 1) {
    const int64_t per = (num_tiles + gridDim.x - 1) / gridDim.x;
    t0 = blockIdx.x * per;
    t1 = t0 + per < num_tiles ? t0 + per : num_tiles;
    step = 1;
  } else if (kOrder == 2) {
    t1 = t0 + 1;
  }
  for (int64_t tile = t0; tile < t1; tile += step) {
    const int64_t r0 = tile * tile_rows;
    const int64_t b0 = r0 / max_L;
    const int64_t l0 = r0 - b0 * max_L;
    const uint4* src[R];
    uint4* dst[R];
    bool live[R], copy[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
      int64_t l = l0 + k * groups + group;
      int64_t b = b0;
      if (l >= max_L) {
        const int64_t q = l / max_L;
        b += q;
        l -= q * max_L;
      }
      live[k] = b < B;
      copy[k] = false;
      src[k] = values;
      dst[k] = out;
      if (live[k]) {
        const int64_t s = off(b), e = off(b + 1);
        const int64_t n = e > s ? (e - s < max_L ? e - s : max_L) : 0;
        copy[k] = l < n;
        src[k] = values + (s + l) * W;
        dst[k] = out + (b * max_L + l) * W;
      }
    }
    uint4 v[R][UPL];
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int u = 0; u < UPL; ++u) {
        const int64_t c = lane + u * lanes;
        v[k][u] = make_uint4(0, 0, 0, 0);
        if (copy[k] && c < W) v[k][u] = kStream ? __ldcs(src[k] + c) : src[k][c];
      }
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int u = 0; u < UPL; ++u) {
        const int64_t c = lane + u * lanes;
        if (live[k] && c < W) {
          if (kStream)
            __stcs(dst[k] + c, v[k][u]);
          else
            dst[k][c] = v[k][u];
        }
      }
  }
}

// Sequence grid: block (x, b) moves rows [x * tile_rows, (x+1) * tile_rows) of sequence b (a 2D
// grid, no division, one offsets pair per block); the same for both directions (kD2J: dense ->
// jagged, rows l >= n_b of the jagged side are not written here; zero rows past S are handled by
// blocks with x * tile_rows >= S up to ceil(max_len / tile_rows)).
template <int R, int UPL, bool kD2J>
__global__ void __launch_bounds__(512)
    seqgrid(const uint4* __restrict__ in, uint4* __restrict__ out, cc::ClampedOffsets off,
            int64_t S, int64_t W, int lanes_log2) {
  const int lanes = 1 << lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> lanes_log2;
  const int64_t b = blockIdx.y;
  const int64_t s = off(b), e = off(b + 1);
  const int64_t len = e > s ? e - s : 0;
  const int64_t n = len < S ? len : S;
  const int64_t tile_rows = int64_t{R} * groups;
  const int64_t l0 = blockIdx.x * tile_rows;
  // j2pd writes all S rows of b (copy below n, pad after); d2j writes the len rows of b (copy
  // below n, zeros after).
  const int64_t rows = kD2J ? len : S;
  if (l0 >= rows) return;
  uint4 v[R][UPL];
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int u = 0; u < UPL; ++u) {
      const int64_t l = l0 + k * groups + group;
      const int64_t c = lane + u * lanes;
      v[k][u] = make_uint4(0, 0, 0, 0);
      if (l < n && c < W) v[k][u] = __ldcs(in + (kD2J ? (b * S + l) : (s + l)) * W + c);
    }
#pragma unroll
  for (int k = 0; k < R; ++k)
#pragma unroll
    for (int u = 0; u < UPL; ++u) {
      const int64_t l = l0 + k * groups + group;
      const int64_t c = lane + u * lanes;
      if (l < rows && c < W) __stcs(out + (kD2J ? (s + l) : (b * S + l)) * W + c, v[k][u]);
    }
}

// d2j V2: the library's jagged walk with compile-time units per lane and all loads before stores,
// and (kPrefetch) the next tile's sequence range searched while this tile's loads are in flight.
template <int R, int UPL, bool kPrefetch>
__global__ void __launch_bounds__(512)
    d2j_v2(const uint4* __restrict__ dense, uint4* __restrict__ out, cc::ClampedOffsets off,
           int64_t B, int64_t S, int64_t total_L, int64_t W, int64_t tile_rows, int64_t num_tiles,
           int lanes_log2) {
  __shared__ int64_t s_range[2][2];
  const int lanes = 1 << lanes_log2;
  const int lane = threadIdx.x & (lanes - 1);
  const int group = threadIdx.x >> lanes_log2;
  const int groups = static_cast<int>(blockDim.x) >> lanes_log2;
  const int warp = threadIdx.x >> 5;
  auto search = [&](int64_t tile, int buf) {
    if (warp < 2 && tile < num_tiles) {
      const int64_t r0 = tile * tile_rows;
      const int64_t re = r0 + tile_rows < total_L ? r0 + tile_rows : total_L;
      const int64_t b = recops::ops::d2j_cuda::warp_find_sequence(off, B, warp == 0 ? r0 : re - 1);
      if ((threadIdx.x & 31) == 0) s_range[buf][warp] = b;
    }
  };
  int buf = 0;
  search(blockIdx.x, 0);
  __syncthreads();
  for (int64_t tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const int64_t r0 = tile * tile_rows;
    const int64_t r_end = r0 + tile_rows < total_L ? r0 + tile_rows : total_L;
    if (!kPrefetch && tile != blockIdx.x) {
      search(tile, buf);
      __syncthreads();
    }
    const int64_t b_lo = s_range[buf][0];
    const int64_t b_hi = s_range[buf][1] > b_lo ? s_range[buf][1] : b_lo;
    const uint4* src[R];
    uint4* dst[R];
    bool live[R], copy[R];
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const int64_t r = r0 + k * groups + group;
      live[k] = r < r_end;
      copy[k] = false;
      src[k] = dense;
      dst[k] = out + r * W;
      if (live[k]) {
        int64_t lo = b_lo, hi = b_hi;
        while (lo < hi) {
          const int64_t mid = lo + ((hi - lo + 1) >> 1);
          if (off(mid) <= r)
            lo = mid;
          else
            hi = mid - 1;
        }
        const int64_t st = off(lo), en = off(lo + 1);
        const int64_t l = r - st;
        copy[k] = r >= st && r < en && l < S;
        if (copy[k]) src[k] = dense + (lo * S + l) * W;
      }
    }
    uint4 v[R][UPL];
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int u = 0; u < UPL; ++u) {
        const int64_t c = lane + u * lanes;
        v[k][u] = make_uint4(0, 0, 0, 0);
        if (copy[k] && c < W) v[k][u] = __ldcs(src[k] + c);
      }
    if (kPrefetch) {
      search(tile + gridDim.x, buf ^ 1);
    }
#pragma unroll
    for (int k = 0; k < R; ++k)
#pragma unroll
      for (int u = 0; u < UPL; ++u) {
        const int64_t c = lane + u * lanes;
        if (live[k] && c < W) __stcs(dst[k] + c, v[k][u]);
      }
    if (kPrefetch) {
      __syncthreads();  // next range written; this range no longer read by anyone
      buf ^= 1;
    } else {
      __syncthreads();
    }
  }
}

// ---- harness -----------------------------------------------------------------------------------
struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
  }
  double median_ms(const std::function<void()>& f, int reps = 60) {
    for (int i = 0; i < 5; ++i) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
      CK(cudaEventRecord(a));
      f();
      CK(cudaEventRecord(b));
      CK(cudaEventSynchronize(b));
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};

static int occupancy_grid(const void* k, int threads, int64_t tiles) {
  int dev = 0, sms = 0, per = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, threads, 0));
  const int64_t g = int64_t{sms} * std::max(per, 1);
  return static_cast<int>(std::min<int64_t>(g, std::max<int64_t>(tiles, 1)));
}

int main(int argc, char** argv) {
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 1024;
  const int64_t max_L = argc > 2 ? std::atoll(argv[2]) : 1024;
  const int64_t D = argc > 3 ? std::atoll(argv[3]) : 256;
  const int64_t es = argc > 4 ? std::atoll(argv[4]) : 2;
  const int64_t W = D * es / 16;  // uint4 units per row
  if (W * 16 != D * es || W > 128) {
    std::fprintf(stderr, "need D*elem_bytes a multiple of 16 and at most 2048\n");
    return 1;
  }
  std::mt19937_64 rng(1234);
  std::lognormal_distribution<double> lg(std::log(max_L / 4.0), 1.0);
  std::vector<int64_t> offs(B + 1, 0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = std::min<int64_t>(2 * max_L, std::llround(lg(rng)));
    offs[b + 1] = offs[b] + L;
  }
  const int64_t total_L = offs[B];
  int64_t copied = 0;
  for (int64_t b = 0; b < B; ++b) copied += std::min(offs[b + 1] - offs[b], max_L);
  const double row = static_cast<double>(W * 16);
  const double j2pd_bytes = row * (copied + B * max_L);  // read copied rows, write B*max_L
  const double d2j_bytes = row * (copied + total_L);     // read copied rows, write total_L
  std::printf("B=%lld max_L=%lld D=%lld elem=%lld  total_L=%lld copied=%lld  row=%g B\n",
              (long long)B, (long long)max_L, (long long)D, (long long)es, (long long)total_L,
              (long long)copied, row);

  int64_t* d_off;
  uint4 *values, *dense, *out_a, *out_b;
  CK(cudaMalloc(&d_off, (B + 1) * 8));
  CK(cudaMemcpy(d_off, offs.data(), (B + 1) * 8, cudaMemcpyHostToDevice));
  const size_t vbytes = total_L * W * 16, dbytes = B * max_L * W * 16;
  CK(cudaMalloc(&values, vbytes));
  CK(cudaMalloc(&dense, dbytes));
  CK(cudaMalloc(&out_a, std::max(vbytes, dbytes)));
  CK(cudaMalloc(&out_b, std::max(vbytes, dbytes)));
  {  // random bits (never zeros)
    std::vector<uint32_t> h(std::max(vbytes, dbytes) / 4);
    for (auto& x : h) x = static_cast<uint32_t>(rng());
    CK(cudaMemcpy(values, h.data(), vbytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dense, h.data(), dbytes, cudaMemcpyHostToDevice));
  }
  cc::ClampedOffsets off{d_off, 1, total_L, true};
  Timer tm;
  std::vector<std::pair<std::string, double>> rows;

  // Ceilings: 1 GiB memcpy (the bench's), and memcpys of each conversion's traffic.
  {
    uint4 *a, *b;
    const size_t n = size_t{1} << 30;
    CK(cudaMalloc(&a, n));
    CK(cudaMalloc(&b, n));
    const double ms = tm.median_ms([&] { CK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice)); });
    rows.push_back({"memcpy 1GiB", 2.0 * n / ms / 1e6});
    const size_t h1 = static_cast<size_t>(j2pd_bytes / 2) & ~size_t{255};
    const double ms1 =
        tm.median_ms([&] { CK(cudaMemcpyAsync(b, a, h1, cudaMemcpyDeviceToDevice)); });
    rows.push_back({"memcpy j2pd-bytes", 2.0 * h1 / ms1 / 1e6});
    const size_t h2 = static_cast<size_t>(d2j_bytes / 2) & ~size_t{255};
    const double ms2 =
        tm.median_ms([&] { CK(cudaMemcpyAsync(b, a, h2, cudaMemcpyDeviceToDevice)); });
    rows.push_back({"memcpy d2j-bytes", 2.0 * h2 / ms2 / 1e6});
    CK(cudaFree(a));
    CK(cudaFree(b));
  }
  const double ceil = rows[0].second;

  auto check = [&](const char* name, size_t nbytes, const std::function<void()>& ref,
                   const std::function<void()>& f) {
    CK(cudaMemset(out_a, 0xAB, nbytes));
    g_dst = out_a;
    ref();
    CK(cudaMemset(out_b, 0xCD, nbytes));
    g_dst = out_b;
    f();
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    std::vector<char> ha(nbytes), hb(nbytes);
    CK(cudaMemcpy(ha.data(), out_a, nbytes, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb.data(), out_b, nbytes, cudaMemcpyDeviceToHost));
    if (std::memcmp(ha.data(), hb.data(), nbytes) != 0) {
      return false;
    }
    return true;
  };

  // ---- j2pd ----
  namespace j = recops::ops::j2pd_cuda;
  auto j2pd_lib = [&](int threads, int rpt, int upl, bool nonpersistent) {
    j::Args<uint4> a{};
    a.values = values;
    a.out = out_b;
    a.offsets = off;
    a.B = B;
    a.max_L = max_L;
    a.W = W;
    a.values_row_stride = W;
    a.out_batch_stride = max_L * W;
    a.out_row_stride = W;
    int g = 0;
    while (g < 5 && upl * (1 << g) < W) ++g;
    a.lanes_log2 = g;
    a.tile_rows = int64_t{rpt} * (threads >> g);
    a.num_tiles = (B * max_L + a.tile_rows - 1) / a.tile_rows;
    a.pad = make_uint4(0, 0, 0, 0);
    const void* k = rpt == 8 ? (const void*)&j::jagged_to_padded_dense_kernel<uint4, 8>
                             : (const void*)&j::jagged_to_padded_dense_kernel<uint4, 4>;
    const int grid = nonpersistent ? (int)a.num_tiles : occupancy_grid(k, threads, a.num_tiles);
    return std::function<void()>([=] {
      j::Args<uint4> c = a;
      c.out = g_dst;
      if (rpt == 8)
        j::jagged_to_padded_dense_kernel<uint4, 8><<<grid, threads>>>(c);
      else
        j::jagged_to_padded_dense_kernel<uint4, 4><<<grid, threads>>>(c);
    });
  };
  const auto j2pd_ref = j2pd_lib(256, 4, 2, false);
  auto add = [&](const std::string& name, double bytes, size_t nbytes,
                 const std::function<void()>& ref, const std::function<void()>& f) {
    const bool ok = check(name.c_str(), nbytes, ref, f);
    const double ms = tm.median_ms(f);
    const double gbps = bytes / ms / 1e6;
    std::printf("%-44s %8.4f ms %8.1f GB/s %6.1f%% of 1GiB copy %s\n", name.c_str(), ms, gbps,
                100 * gbps / ceil, ok ? "" : "MISMATCH");
    std::fflush(stdout);
  };
  for (auto& r : rows) std::printf("%-44s %8.1f GB/s\n", r.first.c_str(), r.second);

  auto j2pd_v2_launch = [&](auto R_, auto UPL_, auto ORD_, auto ST_, int threads) {
    constexpr int R = decltype(R_)::value, UPL = decltype(UPL_)::value;
    constexpr int ORD = decltype(ORD_)::value;
    constexpr bool ST = decltype(ST_)::value;
    int g = 0;
    while (g < 5 && UPL * (1 << g) < W) ++g;
    const int64_t tile_rows = int64_t{R} * (threads >> g);
    const int64_t tiles = (B * max_L + tile_rows - 1) / tile_rows;
    const void* k = (const void*)&j2pd_v2<R, UPL, ORD, ST>;
    const int grid = ORD == 2 ? (int)tiles : occupancy_grid(k, threads, tiles);
    return std::function<void()>([=] {
      j2pd_v2<R, UPL, ORD, ST>
          <<<grid, threads>>>(values, g_dst, off, B, max_L, W, tile_rows, tiles, g);
    });
  };
  using std::integral_constant;
  using I = int;
  const size_t jn = dbytes;
  add("j2pd lib 256x4 upl2 persistent", j2pd_bytes, jn, j2pd_ref, j2pd_lib(256, 4, 2, false));
  add("j2pd lib 256x4 upl2 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
      j2pd_lib(256, 4, 2, true));
  add("j2pd lib 512x8 upl2 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
      j2pd_lib(512, 8, 2, true));
  add("j2pd lib 256x8 upl2 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
      j2pd_lib(256, 8, 2, true));
  add("j2pd lib 256x4 upl1 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
      j2pd_lib(256, 4, 1, true));
  if (W <= 64) {
    add("j2pd v2 256 R4 upl2 stride", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{},
                       integral_constant<I, 0>{}, std::true_type{}, 256));
    add("j2pd v2 256 R4 upl2 contiguous", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{},
                       integral_constant<I, 1>{}, std::true_type{}, 256));
    add("j2pd v2 256 R4 upl2 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{},
                       integral_constant<I, 2>{}, std::true_type{}, 256));
    add("j2pd v2 256 R4 upl2 stride plain-ldst", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{},
                       integral_constant<I, 0>{}, std::false_type{}, 256));
    add("j2pd v2 256 R8 upl2 stride", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{},
                       integral_constant<I, 0>{}, std::true_type{}, 256));
    add("j2pd v2 256 R8 upl2 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{},
                       integral_constant<I, 2>{}, std::true_type{}, 256));
    add("j2pd v2 128 R4 upl4 one-block-per-tile", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 4>{},
                       integral_constant<I, 2>{}, std::true_type{}, 128));
    add("j2pd v2 512 R4 upl2 stride", j2pd_bytes, jn, j2pd_ref,
        j2pd_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{},
                       integral_constant<I, 0>{}, std::true_type{}, 512));
  }
  auto seq_launch = [&](auto R_, auto UPL_, auto D2J_, int threads) {
    constexpr int R = decltype(R_)::value, UPL = decltype(UPL_)::value;
    constexpr bool D2J = decltype(D2J_)::value;
    int g = 0;
    while (g < 5 && UPL * (1 << g) < W) ++g;
    const int64_t tile_rows = int64_t{R} * (threads >> g);
    int64_t longest = 0;
    for (int64_t b = 0; b < B; ++b) longest = std::max(longest, offs[b + 1] - offs[b]);
    const int64_t rows = D2J ? longest : max_L;
    const dim3 grid((unsigned)((rows + tile_rows - 1) / tile_rows), (unsigned)B);
    return std::function<void()>([=] {
      seqgrid<R, UPL, D2J><<<grid, threads>>>(D2J ? dense : values, g_dst, off, max_L, W, g);
    });
  };
  if (W <= 64) {
    add("j2pd seqgrid 256 R4 upl2", j2pd_bytes, jn, j2pd_ref,
        seq_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{}, std::false_type{}, 256));
    add("j2pd seqgrid 256 R8 upl2", j2pd_bytes, jn, j2pd_ref,
        seq_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{}, std::false_type{}, 256));
  }

  // ---- d2j ----
  namespace dj = recops::ops::d2j_cuda;
  auto d2j_lib = [&](int threads, int rpt, int upl, bool nonpersistent) {
    dj::Args<uint4> a{};
    a.dense = dense;
    a.offsets = off;
    a.B = B;
    a.S = max_L;
    a.total_L = total_L;
    a.W = W;
    a.dense_batch_stride = max_L * W;
    a.dense_row_stride = W;
    a.out_row_stride = W;
    int g = 0;
    while (g < 5 && upl * (1 << g) < W) ++g;
    a.lanes_log2 = g;
    a.tile_rows = int64_t{rpt} * (threads >> g);
    a.num_tiles = (total_L + a.tile_rows - 1) / a.tile_rows;
    const void* k = rpt == 8 ? (const void*)&dj::dense_to_jagged_kernel<uint4, 8>
                             : (const void*)&dj::dense_to_jagged_kernel<uint4, 4>;
    const int grid = nonpersistent ? (int)a.num_tiles : occupancy_grid(k, threads, a.num_tiles);
    return std::function<void()>([=] {
      dj::Args<uint4> c = a;
      c.out = g_dst;
      if (rpt == 8)
        dj::dense_to_jagged_kernel<uint4, 8><<<grid, threads>>>(c);
      else
        dj::dense_to_jagged_kernel<uint4, 4><<<grid, threads>>>(c);
    });
  };
  const size_t dn = vbytes;
  const auto d2j_ref = d2j_lib(256, 4, 2, false);
  add("d2j lib 256x4 upl2 persistent", d2j_bytes, dn, d2j_ref, d2j_lib(256, 4, 2, false));
  add("d2j lib 256x4 upl2 one-block-per-tile", d2j_bytes, dn, d2j_ref, d2j_lib(256, 4, 2, true));
  add("d2j lib 512x8 upl2 one-block-per-tile", d2j_bytes, dn, d2j_ref, d2j_lib(512, 8, 2, true));
  add("d2j lib 256x8 upl2 one-block-per-tile", d2j_bytes, dn, d2j_ref, d2j_lib(256, 8, 2, true));
  auto d2j_v2_launch = [&](auto R_, auto UPL_, auto PF_, int threads) {
    constexpr int R = decltype(R_)::value, UPL = decltype(UPL_)::value;
    constexpr bool PF = decltype(PF_)::value;
    int g = 0;
    while (g < 5 && UPL * (1 << g) < W) ++g;
    const int64_t tile_rows = int64_t{R} * (threads >> g);
    const int64_t tiles = (total_L + tile_rows - 1) / tile_rows;
    const int grid = occupancy_grid((const void*)&d2j_v2<R, UPL, PF>, threads, tiles);
    return std::function<void()>([=] {
      d2j_v2<R, UPL, PF>
          <<<grid, threads>>>(dense, g_dst, off, B, max_L, total_L, W, tile_rows, tiles, g);
    });
  };
  if (W <= 64) {
    add("d2j v2 256 R4 upl2", d2j_bytes, dn, d2j_ref,
        d2j_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{}, std::false_type{},
                      256));
    add("d2j v2 256 R4 upl2 prefetch", d2j_bytes, dn, d2j_ref,
        d2j_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{}, std::true_type{}, 256));
    add("d2j v2 256 R8 upl2 prefetch", d2j_bytes, dn, d2j_ref,
        d2j_v2_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{}, std::true_type{}, 256));
    add("d2j v2 512 R4 upl2 prefetch", d2j_bytes, dn, d2j_ref,
        d2j_v2_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{}, std::true_type{}, 512));
    add("d2j seqgrid 256 R4 upl2", d2j_bytes, dn, d2j_ref,
        seq_launch(integral_constant<I, 4>{}, integral_constant<I, 2>{}, std::true_type{}, 256));
    add("d2j seqgrid 256 R8 upl2", d2j_bytes, dn, d2j_ref,
        seq_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{}, std::true_type{}, 256));
    add("d2j seqgrid 128 R8 upl2", d2j_bytes, dn, d2j_ref,
        seq_launch(integral_constant<I, 8>{}, integral_constant<I, 2>{}, std::true_type{}, 128));
  }
  return 0;
}
