// Launching a kernels/ functor on a CUDA stream from host code compiled by the C++ compiler: the
// declarations only. The definitions (a grid-stride kernel, kernels/launch_device.cuh; the column
// sums of kernels/reduction_device.cuh) are compiled by nvcc and explicitly instantiated for every
// functor the layers, optimizers, loss and input pipeline launch (src/backend/cuda/device_kernels.cu);
// a functor missing there is a link error of the cuda build, not a failure at run time.
#pragma once
#include <cstdint>

#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/segment_sums.hpp"

namespace scaletrain::kernels {

// Queues f(i) for i in [0, n) on the cudaStream_t `stream`; throws Error naming `label` and the
// CUDA error when the launch fails.
template <class F>
void launch_cuda(void* stream, const char* label, int64_t n, const F& f);

// Queues f(r, p) for r in [0, rows), p in [0, packs) (kernels/launch_device.cuh's rows kernel).
template <class F>
void launch_cuda_rows(void* stream, const char* label, int64_t rows, int64_t packs, const F& f);

// Queues the column sums of `src` by `plan` (one or two kernels) on `stream`; throws as launch_cuda.
template <class Source, class Sink>
void launch_cuda_column_sums(void* stream, const char* label, const ColumnSumsPlan& plan, const Source& src,
                             double* partial, const Sink& sink);

// Queues the per-segment sums of `src` by `plan` (two kernels) on `stream`; throws as launch_cuda.
template <class Source, class Sink>
void launch_cuda_segment_sums(void* stream, const char* label, const SegmentSumsPlan& plan, const SegmentTables& tables,
                              const Source& src, double* partial, const Sink& sink);

// Queues the per-row reduction functor f over plan.rows rows (kernels/reduction_device.cuh).
template <class F>
void launch_cuda_row_reductions(void* stream, const char* label, const RowsPlan& plan, const F& f);

}  // namespace scaletrain::kernels
