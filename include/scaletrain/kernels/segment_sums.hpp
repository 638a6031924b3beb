// Per-segment sums over a flat buffer, on the reduction primitive (kernels/reduction.hpp): segment s
// is elements [offsets[s], offsets[s + 1]) (a model's tensors in its flat parameters or gradients,
// whose per-tensor norms LARS and LAMB take). Each segment splits into blocks of `chunk` elements; a
// block sums its elements as a one-column block of the column sums does (thread j of 256 takes
// elements begin + j, begin + j + 256, ... in f32, shifted by the block's first value, then the tree
// over the threads and an f64 partial), and a second pass adds each segment's blocks in order, in
// f64. A source has kWidth and load(i, s, v) for element i of segment s (s is the same for a whole
// block, so a source may pick an array by it without costing the host loop its vectorization); the
// sinks are the column sums', storing k = w * segments + s. The device finds a block's segment by a
// binary search over the plan's first blocks, so the offsets and first blocks are tables the caller
// keeps where the device reads them (SegmentTables). cpu and sim run the same order in loops and agree
// bitwise; CUDA to rounding.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain::kernels {

struct SegmentSumsPlan {
  int64_t segments = 0;
  int64_t chunk = 0;   // elements per block, a multiple of kReductionThreads
  int64_t blocks = 0;  // the first pass's blocks over every segment (an empty segment has none)
  int width = 1;       // values per element (the source's kWidth)
  // The f64 partial sums of the first pass: [blocks, width].
  int64_t partial_size() const { return blocks * width; }
};

// The plan for these segment offsets (segments + 1 of them, non-decreasing) and SM count: blocks of
// at least kReductionThreads * kReductionMinRowsPerLane elements, aiming at kReductionBlocksPerSm
// blocks per SM over the whole buffer.
SegmentSumsPlan plan_segment_sums(std::span<const int64_t> offsets, int width, int sm_count);

// The table a launch reads ([2 * (segments + 1)]): the offsets, then the first block of each segment
// under `plan` and the block count last. A caller copies it where the device reads it (SegmentTables::in).
std::vector<int64_t> segment_tables(const SegmentSumsPlan& plan, std::span<const int64_t> offsets);

// Where the device reads the segments' offsets and first blocks ([segments + 1] each).
struct SegmentTables {
  const int64_t* offsets;
  const int64_t* first_block;
  // The two halves of segment_tables' table at `table`.
  static SegmentTables in(const int64_t* table, int64_t segments) { return {table, table + segments + 1}; }
  // The segment of block b: the last s whose first block is at most b.
  SCALETRAIN_HOST_DEVICE int64_t segment_of(int64_t b, int64_t segments) const {
    int64_t lo = 0, hi = segments;
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (first_block[mid] <= b) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    return lo;
  }
  // Block b's elements [begin, end); returns its segment.
  SCALETRAIN_HOST_DEVICE int64_t range(int64_t b, int64_t segments, int64_t chunk, int64_t* begin, int64_t* end) const {
    const int64_t s = segment_of(b, segments);
    *begin = offsets[s] + (b - first_block[s]) * chunk;
    *end = *begin + chunk < offsets[s + 1] ? *begin + chunk : offsets[s + 1];
    return s;
  }
};

// The host's first pass: b over the plan's blocks, each into partial[b * width + w].
template <class Source>
struct SegmentSumsBlock {
  static constexpr int W = Source::kWidth;
  SegmentSumsPlan plan;
  SegmentTables tables;
  Source src;
  double* partial;

  void operator()(int64_t b) const {
    int64_t begin = 0, end = 0;
    const int64_t seg = tables.range(b, plan.segments, plan.chunk, &begin, &end);
    float acc[W * kReductionThreads] = {};
    float shift[W];
    src.load(begin, seg, shift);
    for (int64_t r0 = begin; r0 < end; r0 += kReductionThreads) {
      const int64_t n = end - r0 < kReductionThreads ? end - r0 : kReductionThreads;
      for (int64_t j = 0; j < n; ++j) {
        float v[W];  // per element and its W unrolled, so that the compiler keeps it in registers
        src.load(r0 + j, seg, v);
        each_in_pack<W>([&](int w) { acc[w * kReductionThreads + j] += v[w] - shift[w]; });
      }
    }
    for (int h = kReductionThreads / 2; h > 0; h /= 2)
      for (int w = 0; w < W; ++w)
        for (int j = 0; j < h; ++j) acc[w * kReductionThreads + j] += acc[w * kReductionThreads + j + h];
    const double count = static_cast<double>(end - begin);
    for (int w = 0; w < W; ++w)
      partial[b * W + w] = static_cast<double>(acc[w * kReductionThreads]) + count * static_cast<double>(shift[w]);
  }
};

// The second pass, host and device: k = w * segments + s over width * segments, segment s's blocks
// in order (0 for an empty segment).
template <class Sink>
struct SegmentSumsFinish {
  const double* partial;
  const int64_t* first_block;
  int64_t segments;
  int width;
  Sink sink;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t k) const {
    const int64_t w = k / segments, s = k - w * segments;
    double sum = 0.0;
    for (int64_t b = first_block[s]; b < first_block[s + 1]; ++b) sum += partial[b * width + w];
    sink.store(k, sum);
  }
};

// Sources: the values of x (T: float, bf16, f16) and their squares (per-tensor norms: the square
// root of a segment's sum).
template <class T>
struct Values {
  static constexpr int kWidth = 1;
  const T* x;
  SCALETRAIN_HOST_DEVICE void load(int64_t i, int64_t, float* v) const { v[0] = to_float(x[i]); }
};

template <class T>
struct SquaredValues {
  static constexpr int kWidth = 1;
  const T* x;
  SCALETRAIN_HOST_DEVICE void load(int64_t i, int64_t, float* v) const {
    const float f = to_float(x[i]);
    v[0] = f * f;
  }
};

}  // namespace scaletrain::kernels
