// Chains of fp32 FMAs and of vdpbf16ps on one thread, timed (see instruction_rates.hpp).
#include "scaletrain/backend/cpu/instruction_rates.hpp"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace scaletrain::cpu {
namespace {

// 12 independent accumulators hide the FMA latency (4 cycles) on 2 FMA ports.
constexpr int kFmaChains = 12;
// vdpbf16ps zmm: for each of 16 fp32 lanes, acc += a[2i]*b[2i] + a[2i+1]*b[2i+1] with bf16 inputs:
// 16 lanes x 2 pairs x 2 (multiply, add) = 64 FLOPs. Its latency is 5-6 cycles (Intel, AMD Zen 4)
// at up to 2 per cycle: 16 independent accumulators hide it, with registers to spare (32 zmm).
constexpr int kDpChains = 16;

template <class F>
double best_rate(F kernel, double flops, int repeats) {
  double best = 0;
  volatile double sink = 0;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    sink = sink + kernel();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0) best = std::max(best, flops / s);
  }
  return best;
}

}  // namespace

const double kFmaAvx512FlopsPerIter = kFmaChains * 16 * 2;
const double kFmaAvx2FlopsPerIter = kFmaChains * 8 * 2;
const double kDpbf16FlopsPerIter = kDpChains * 16 * 2 * 2;

bool have_avx512f() {
  static const bool yes = __builtin_cpu_supports("avx512f");
  return yes;
}

// libgcc's check includes the OS's support of the AVX-512 register state (XCR0).
bool have_avx512_bf16() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
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

double fp32_fma_flops_per_s(int64_t iters, int repeats) {
  if (have_avx512f())
    return best_rate([&] { return fma_chains_avx512(iters); }, kFmaAvx512FlopsPerIter * iters, repeats);
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return best_rate([&] { return fma_chains_avx2(iters); }, kFmaAvx2FlopsPerIter * iters, repeats);
  return 0;
}

double bf16_dot_flops_per_s(int64_t iters, int repeats) {
  if (!have_avx512_bf16()) return 0;
  return best_rate([&] { return dpbf16_chains_avx512(iters); }, kDpbf16FlopsPerIter * iters, repeats);
}

}  // namespace scaletrain::cpu
