// Measured instruction throughput of one core: independent chains of fp32 FMAs (AVX-512, or AVX2)
// and of AVX512-BF16 dot products (vdpbf16ps), from registers. bench_peak_flops reports the peaks
// from them; the CPU backend compares the two to choose how bf16 GEMMs compute (cpu_bf16_gemm.hpp).
#pragma once
#include <cstdint>

namespace scaletrain::cpu {

// Whether the CPU (and the OS's register state) supports each kernel.
bool have_avx512f();
bool have_avx512_bf16();

// Each runs `iters` rounds on the calling thread and returns a value derived from the chains (so
// the work is not optimized away). FLOPs per round are the constants beside them.
double fma_chains_avx512(int64_t iters);
double fma_chains_avx2(int64_t iters);
double dpbf16_chains_avx512(int64_t iters);  // requires have_avx512_bf16()
extern const double kFmaAvx512FlopsPerIter;
extern const double kFmaAvx2FlopsPerIter;
extern const double kDpbf16FlopsPerIter;

// FLOP/s of this thread's core, best of `repeats` timed runs of `iters` rounds each; 0 where the
// instructions are missing.
double fp32_fma_flops_per_s(int64_t iters, int repeats);
double bf16_dot_flops_per_s(int64_t iters, int repeats);

}  // namespace scaletrain::cpu
