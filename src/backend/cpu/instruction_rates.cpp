// Chains of fp32 FMAs, vdpbf16ps and AMX tdpbf16ps on one thread, timed (see instruction_rates.hpp).
#include "scaletrain/backend/cpu/instruction_rates.hpp"

#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace scaletrain::cpu {
namespace {

// 12 independent accumulators hide the FMA latency (4 cycles) on 2 FMA ports.
constexpr int kFmaChains = 12;
// vdpbf16ps zmm: for each of 16 fp32 lanes, acc += a[2i]*b[2i] + a[2i+1]*b[2i+1] with bf16 inputs:
// 16 lanes x 2 pairs x 2 (multiply, add) = 64 FLOPs. Its latency is 5-6 cycles (Intel, AMD Zen 4)
// at up to 2 per cycle: 16 independent accumulators hide it, with registers to spare (32 zmm).
constexpr int kDpChains = 16;
// AMX: tdpbf16ps multiplies a 16x32 bf16 tile by a 32x16 one (stored as 16 rows of 16 bf16 pairs) into
// a 16x16 f32 tile: 16 x 16 x 32 x 2 = 16384 FLOPs. Four accumulator tiles (tmm0-3) from two A (tmm4-5)
// and two B tiles (tmm6-7) keep the unit busy while each product's result is pending.
constexpr int kAmxChains = 4;
constexpr double kAmxFlopsPerInstruction = 16.0 * 16 * 32 * 2;

// LDTILECFG's 64-byte operand (palette 1).
struct alignas(64) TileConfig {
  uint8_t palette_id = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Linux (5.16+) gives a process AMX's tile data only once it asks (arch/x86/include/uapi/asm/prctl.h).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtileData = 18;

bool os_enables_amx_tiles() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  constexpr unsigned kTileCfgAndData = (1u << 17) | (1u << 18);
  return (lo & kTileCfgAndData) == kTileCfgAndData;
}

}  // namespace

const double kFmaAvx512FlopsPerIter = kFmaChains * 16 * 2;
const double kFmaAvx2FlopsPerIter = kFmaChains * 8 * 2;
const double kDpbf16FlopsPerIter = kDpChains * 16 * 2 * 2;
const double kAmxBf16FlopsPerIter = kAmxChains * kAmxFlopsPerInstruction;

bool have_avx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// libgcc's check includes the OS's support of the AVX-512 register state (XCR0).
bool have_avx512_bf16() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  return yes;
}

bool have_amx_bf16() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
    if (!amx_bf16 || !amx_tile || !os_enables_amx_tiles()) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  }();
  return yes;
}

__attribute__((target("avx512f"))) double fma_chains_avx512(int64_t iters) {
  __m512 a[kFmaChains];
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (int k = 0; k < kFmaChains; ++k) a[k] = _mm512_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kFmaChains; ++k) a[k] = _mm512_fmadd_ps(a[k], m, c);
  float out[16];
  __m512 s = a[0];
  for (int k = 1; k < kFmaChains; ++k) s = _mm512_add_ps(s, a[k]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx2,fma"))) double fma_chains_avx2(int64_t iters) {
  __m256 a[kFmaChains];
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (int k = 0; k < kFmaChains; ++k) a[k] = _mm256_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kFmaChains; ++k) a[k] = _mm256_fmadd_ps(a[k], m, c);
  float out[8];
  __m256 s = a[0];
  for (int k = 1; k < kFmaChains; ++k) s = _mm256_add_ps(s, a[k]);
  _mm256_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("avx512f,avx512bf16"))) double dpbf16_chains_avx512(int64_t iters) {
  __m512 a[kDpChains];
  const __m512bh m = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.999f), _mm512_set1_ps(0.999f));
  const __m512bh c = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-7f), _mm512_set1_ps(1e-7f));
  for (int k = 0; k < kDpChains; ++k) a[k] = _mm512_set1_ps(1.0f + static_cast<float>(k));
  for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 16
    for (int k = 0; k < kDpChains; ++k) a[k] = _mm512_dpbf16_ps(a[k], m, c);
  float out[16];
  __m512 s = a[0];
  for (int k = 1; k < kDpChains; ++k) s = _mm512_add_ps(s, a[k]);
  _mm512_storeu_ps(out, s);
  return out[0];
}

__attribute__((target("amx-tile,amx-bf16"))) double amx_bf16_chains(int64_t iters) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  alignas(64) float acc[16 * 16] = {};
  alignas(64) uint16_t operand[16 * 32];
  const float small = 1e-3f;  // bf16 0x3A83: sums stay far from overflow over any iteration count
  uint32_t bits = 0;
  std::memcpy(&bits, &small, sizeof bits);
  std::fill(operand, operand + 16 * 32, static_cast<uint16_t>(bits >> 16));
  _tile_loadconfig(&cfg);
  _tile_loadd(0, acc, 64);
  _tile_loadd(1, acc, 64);
  _tile_loadd(2, acc, 64);
  _tile_loadd(3, acc, 64);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, acc, 64);
  _tile_release();
  return acc[0];
}

}  // namespace scaletrain::cpu
