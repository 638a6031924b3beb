// The reduction primitive (kernels/reduction.hpp) on a CUDA device: one block of tile_x x lanes
// threads per column tile and row block, each thread summing its lane's rows of one column, then a
// tree over the lanes in shared memory in the host's order; a second kernel (ColumnSumsFinish, the
// grid-stride launch) adds the row blocks' partials where the plan has two passes. Per-row
// reductions: a warp segment per row, the same tree in shuffles (DeviceRow). Per-segment sums
// (kernels/segment_sums.hpp): a block of 256 threads per chunk of a segment, the host's tree in
// shared memory, then SegmentSumsFinish. No atomics.
#pragma once
#include <cuda_runtime.h>

#include "scaletrain/kernels/launch_device.cuh"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/segment_sums.hpp"

namespace scaletrain::kernels {

template <class Source, class Sink>
__global__ void __launch_bounds__(kReductionThreads)
    column_sums_kernel(ColumnSumsPlan plan, Source src, double* partial, Sink sink) {
  constexpr int W = Source::kWidth;
  __shared__ float acc[W * kReductionThreads];
  const int tx = threadIdx.x, lane = threadIdx.y, t = lane * plan.tile_x + tx;
  const int64_t c = static_cast<int64_t>(blockIdx.x) * plan.tile_x + tx, block = blockIdx.y;
  const int64_t first = block * plan.rows_per_block;
  const int64_t end = first + plan.rows_per_block < plan.rows ? first + plan.rows_per_block : plan.rows;
  const bool live = c < plan.cols;
  float a[W], shift[W], v[W];
  for (int w = 0; w < W; ++w) a[w] = shift[w] = 0.0f;
  if (live) {
    src.load(first, c, shift);
    for (int64_t r = first + lane; r < end; r += plan.lanes) {
      src.load(r, c, v);
      for (int w = 0; w < W; ++w) a[w] += v[w] - shift[w];
    }
  }
  for (int w = 0; w < W; ++w) acc[w * kReductionThreads + t] = a[w];
  __syncthreads();
  for (int s = plan.lanes / 2; s > 0; s /= 2) {
    if (lane < s)
      for (int w = 0; w < W; ++w) acc[w * kReductionThreads + t] += acc[w * kReductionThreads + t + s * plan.tile_x];
    __syncthreads();
  }
  if (lane != 0 || !live) return;
  const double count = static_cast<double>(end - first);
  for (int w = 0; w < W; ++w) {
    const double sum = static_cast<double>(acc[w * kReductionThreads + tx]) + count * static_cast<double>(shift[w]);
    const int64_t k = w * plan.cols + c;
    if (plan.row_blocks > 1) {
      partial[block * W * plan.cols + k] = sum;
    } else {
      sink.store(k, sum);
    }
  }
}

// Queues the plan's passes on `stream`; returns the first launch error.
template <class Source, class Sink>
cudaError_t launch_device_column_sums(const ColumnSumsPlan& plan, const Source& src, double* partial,
                                      const Sink& sink, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(plan.col_tiles), static_cast<unsigned>(plan.row_blocks));
  const dim3 threads(static_cast<unsigned>(plan.tile_x), static_cast<unsigned>(plan.lanes));
  column_sums_kernel<<<grid, threads, 0, stream>>>(plan, src, partial, sink);
  cudaError_t rc = cudaGetLastError();
  if (rc != cudaSuccess || plan.passes() == 1) return rc;
  return launch_device(plan.width * plan.cols,
                       ColumnSumsFinish<Sink>{partial, plan.row_blocks, plan.width * plan.cols, sink}, stream);
}

template <class Source>
__global__ void __launch_bounds__(kReductionThreads)
    segment_sums_kernel(SegmentSumsPlan plan, SegmentTables tables, Source src, double* partial) {
  constexpr int W = Source::kWidth;
  __shared__ float acc[W * kReductionThreads];
  const int t = threadIdx.x;
  for (int64_t b = blockIdx.x; b < plan.blocks; b += gridDim.x) {
    int64_t begin = 0, end = 0;
    const int64_t seg = tables.range(b, plan.segments, plan.chunk, &begin, &end);
    float a[W], shift[W], v[W];
    for (int w = 0; w < W; ++w) a[w] = 0.0f;
    src.load(begin, seg, shift);
    for (int64_t i = begin + t; i < end; i += kReductionThreads) {
      src.load(i, seg, v);
      for (int w = 0; w < W; ++w) a[w] += v[w] - shift[w];
    }
    for (int w = 0; w < W; ++w) acc[w * kReductionThreads + t] = a[w];
    __syncthreads();
    for (int s = kReductionThreads / 2; s > 0; s /= 2) {
      if (t < s)
        for (int w = 0; w < W; ++w) acc[w * kReductionThreads + t] += acc[w * kReductionThreads + t + s];
      __syncthreads();
    }
    if (t == 0)
      for (int w = 0; w < W; ++w)
        partial[b * W + w] = static_cast<double>(acc[w * kReductionThreads]) +
                             static_cast<double>(end - begin) * static_cast<double>(shift[w]);
    __syncthreads();  // acc is the next block's
  }
}

template <class Source, class Sink>
cudaError_t launch_device_segment_sums(const SegmentSumsPlan& plan, const SegmentTables& tables, const Source& src,
                                       double* partial, const Sink& sink, cudaStream_t stream) {
  if (plan.blocks > 0) {
    const int64_t grid = plan.blocks < 65535 ? plan.blocks : 65535;
    segment_sums_kernel<<<static_cast<unsigned>(grid), kReductionThreads, 0, stream>>>(plan, tables, src, partial);
    const cudaError_t rc = cudaGetLastError();
    if (rc != cudaSuccess) return rc;
  }
  return launch_device(plan.width * plan.segments,
                       SegmentSumsFinish<Sink>{partial, tables.first_block, plan.segments, plan.width, sink}, stream);
}

// A row of a per-row reduction on the device: `lanes` threads of one warp, reducing with shuffles in
// the tree HostRow runs. Threads of rows past the end take part in the shuffles with no columns.
struct DeviceRow {
  int64_t r;
  int lane, lanes;
  bool live;
  __device__ bool leader() const { return live && lane == 0; }
  template <class F>
  __device__ float sum(int64_t n, const F& f) const {
    float a = 0.0f;
    for (int64_t k = lane; k < (live ? n : 0); k += lanes) a += f(k);
    for (int s = lanes / 2; s > 0; s /= 2) a += __shfl_down_sync(0xffffffffu, a, s, lanes);
    return __shfl_sync(0xffffffffu, a, 0, lanes);
  }
  template <class F>
  __device__ MaxArg max_arg(int64_t n, const F& f) const {
    const int64_t m = live ? n : 0;
    MaxArg a{lane < m ? f(lane) : -INFINITY, lane < m ? static_cast<int64_t>(lane) : n};
    for (int64_t k = lane + lanes; k < m; k += lanes) a = later_max(a, MaxArg{f(k), k});
    for (int s = lanes / 2; s > 0; s /= 2) {
      const MaxArg b{__shfl_down_sync(0xffffffffu, a.value, s, lanes),
                     static_cast<int64_t>(__shfl_down_sync(0xffffffffu, static_cast<long long>(a.index), s, lanes))};
      if (lane < s) a = later_max(a, b);
    }
    return {__shfl_sync(0xffffffffu, a.value, 0, lanes),
            static_cast<int64_t>(__shfl_sync(0xffffffffu, static_cast<long long>(a.index), 0, lanes))};
  }
  template <class F>
  __device__ void for_each(int64_t n, const F& f) const {
    for (int64_t k = lane; k < (live ? n : 0); k += lanes) f(k);
  }
};

template <class F>
__global__ void __launch_bounds__(kReductionThreads) rows_kernel(RowsPlan plan, F f) {
  for (int64_t b = blockIdx.x; b < plan.blocks(); b += gridDim.x) {
    const int64_t r = b * plan.rows_per_block + threadIdx.y;
    const DeviceRow row{r, static_cast<int>(threadIdx.x), plan.lanes, r < plan.rows};
    f(row);
  }
}

template <class F>
cudaError_t launch_device_row_reductions(const RowsPlan& plan, const F& f, cudaStream_t stream) {
  if (plan.rows <= 0) return cudaSuccess;
  const int64_t blocks = plan.blocks();
  const dim3 threads(static_cast<unsigned>(plan.lanes), static_cast<unsigned>(plan.rows_per_block));
  rows_kernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), threads, 0, stream>>>(plan, f);
  return cudaGetLastError();
}

}  // namespace scaletrain::kernels
