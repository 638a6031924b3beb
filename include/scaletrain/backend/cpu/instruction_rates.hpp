// Measured instruction throughput of one core: independent chains of fp32 FMAs (AVX-512, or AVX2),
// of AVX512-BF16 dot products (vdpbf16ps) from registers, and of AMX bf16 tile products (tdpbf16ps)
// from tile registers. perf/bench_peak_flops reports the peaks from them.
#pragma once
#include <cstdint>

namespace scaletrain::cpu {

// Whether the CPU (and the OS's register state) supports each kernel.
bool have_avx512f();
bool have_avx512_bf16();
// AMX-TILE and AMX-BF16, the OS's tile state (XCR0), and Linux's permission for this process to use
// the tile data (arch_prctl ARCH_REQ_XCOMP_PERM, asked for on the first call).
bool have_amx_bf16();

// Each runs `iters` rounds on the calling thread and returns a value derived from the chains (so
// the work is not optimized away). FLOPs per round are the constants beside them.
double fma_chains_avx512(int64_t iters);
double fma_chains_avx2(int64_t iters);
double dpbf16_chains_avx512(int64_t iters);  // requires have_avx512_bf16()
double amx_bf16_chains(int64_t iters);       // requires have_amx_bf16(); configures and releases the tiles
extern const double kFmaAvx512FlopsPerIter;
extern const double kFmaAvx2FlopsPerIter;
extern const double kDpbf16FlopsPerIter;
extern const double kAmxBf16FlopsPerIter;

}  // namespace scaletrain::cpu
