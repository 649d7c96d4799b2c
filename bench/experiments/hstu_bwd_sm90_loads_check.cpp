// bench/experiments/hstu_bwd_sm90_loads_check.cpp: host check of the index mapping of
// hstu_bwd_sm90_loads.patch's load_rows against the strided loop it replaces: every (row, chunk)
// of the tile exactly once, and thread t's destination d0 + 2048 k equal to the old formula's
// (c / 8) * kRows * 128 + sw128(r, (c % 8) * 8) for row r = t / 16 + 16 k, chunk c = t % 16
// (sw128 copied from src/core/cuda/sm90.cuh). kRows = 64 and 128.
//   g++ -std=c++17 -o /tmp/swz bench/experiments/hstu_bwd_sm90_loads_check.cpp && /tmp/swz
#include <cstdio>
#include <cstdint>
#include <set>
constexpr uint32_t sw128(int r, int c) {
  return static_cast<uint32_t>((r / 8) * 1024 + (r % 8) * 128 + (((c / 8) ^ (r % 8)) & 7) * 16 +
                               (c % 8) * 2);
}
template <int kRows>
bool check() {
  std::set<std::pair<int, int>> seen;
  bool ok = true;
  for (int t = 0; t < 256; ++t) {
    const int r0 = t / 16, c = t % 16;
    const uint32_t d0 = (c / 8) * (kRows * 128) + sw128(r0, (c % 8) * 8);
    for (int k = 0; k < kRows / 16; ++k) {
      const int r = r0 + 16 * k;
      const uint32_t want = (c / 8) * (kRows * 128) + sw128(r, (c % 8) * 8);
      if (d0 + k * 2048 != want) ok = false;
      if (!seen.insert({r, c}).second) ok = false;
    }
  }
  return ok && seen.size() == size_t(kRows) * 16;
}
int main() {
  const bool a = check<64>(), b = check<128>();
  std::printf("64: %d, 128: %d\n", a, b);
  return a && b ? 0 : 1;
}
