// Launching a kernels/ functor on a stream: f(i) for i in [0, n). On the CPU backend it runs at
// once through Kokkos on the host execution space; on the simulated device the stream's worker
// thread runs it the same way, in order with the stream's other work; on a CUDA stream the same
// functor runs as a grid-stride kernel (kernels/launch_cuda.hpp, kernels/launch_device.cuh).
// launch_column_sums and launch_segment_sums run the reduction primitive (kernels/reduction.hpp,
// kernels/segment_sums.hpp) the same three ways: the host order in loops on cpu and sim, block
// reductions on CUDA; each pass counts one call.
#pragma once
#include <cstdint>

#include "scaletrain/backend/stream.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/segment_sums.hpp"
#if SCALETRAIN_HAVE_CUDA
#include "scaletrain/kernels/launch_cuda.hpp"
#endif

namespace scaletrain {

template <class F>
void launch(Stream& stream, const char* label, int64_t n, const F& f) {
  if (n <= 0) return;
  stream.counters().call();
  if (stream.runs_inline()) {
    kernels::launch_host(label, n, f);
    return;
  }
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda(cuda_stream, label, n, f);
    return;
  }
#endif
  stream.enqueue_kernel(label, [label, n, f] { kernels::launch_host(label, n, f); });
}

// f(r, p) for r in [0, rows) and p in [0, packs): an element pass over [rows, C] data in packs of
// channels, consecutive device threads on consecutive packs.
template <class F>
void launch_rows(Stream& stream, const char* label, int64_t rows, int64_t packs, const F& f) {
  if (rows <= 0 || packs <= 0) return;
  stream.counters().call();
  if (stream.runs_inline()) {
    kernels::launch_host_rows(label, rows, packs, f);
    return;
  }
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda_rows(cuda_stream, label, rows, packs, f);
    return;
  }
#endif
  stream.enqueue_kernel(label, [label, rows, packs, f] { kernels::launch_host_rows(label, rows, packs, f); });
}

// A contiguous element-wise functor f (kernels/packs.hpp) over n elements: on a CUDA stream a thread
// takes a pack of kChannelPack elements where n is a multiple of it and f's pointers are aligned
// (f.packs_fit()); elsewhere f(i) per element, whose loop the host compiler vectorizes. The values
// are the same.
template <class F>
void launch_elements(Stream& stream, const char* label, int64_t n, const F& f) {
  if (stream.cuda_handle() != nullptr && kernels::element_packs_fit(n, f)) {
    launch(stream, label, n / kernels::kChannelPack, kernels::ElementPacks<F, kernels::kChannelPack>{f});
  } else {
    launch(stream, label, n, f);
  }
}

// F<T, kChannelPack>{args...} over rows x (channels / kChannelPack) on a CUDA stream where `packed`
// (pack_fits), else F<T, 1>{args...} over rows x channels: on the host a row's channels are one loop,
// which the compiler vectorizes as a whole; a device thread takes a pack. The values are the same.
template <class T, template <class, int> class F, class... A>
void launch_channel_packs(Stream& stream, const char* label, int64_t rows, int64_t channels, bool packed,
                          const A&... args) {
  if (packed && stream.cuda_handle() != nullptr) {
    launch_rows(stream, label, rows, channels / kernels::kChannelPack, F<T, kernels::kChannelPack>{args...});
  } else {
    launch_rows(stream, label, rows, channels, F<T, 1>{args...});
  }
}

// The column sums of `src` by `plan` into `sink`; `partial` holds plan.partial_size() doubles (it
// may be null where the plan has one pass).
template <class Source, class Sink>
void launch_column_sums(Stream& stream, const char* label, const kernels::ColumnSumsPlan& plan, const Source& src,
                        double* partial, const Sink& sink) {
  ST_CHECK(plan.width == Source::kWidth, "reduction '", label, "': its plan sums ", plan.width,
           " values per element, its source ", Source::kWidth);
  ST_CHECK(plan.passes() == 1 || partial != nullptr, "reduction '", label, "': a two-pass plan needs partial sums");
  for (int pass = 0; pass < plan.passes(); ++pass) stream.counters().call();
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda_column_sums(cuda_stream, label, plan, src, partial, sink);
    return;
  }
#endif
  const kernels::ColumnSumsBlock<Source, Sink> blocks{plan, src, partial, sink};
  const int64_t n = plan.row_blocks * kernels::host_column_groups(plan);
  const kernels::ColumnSumsFinish<Sink> finish{partial, plan.row_blocks, plan.width * plan.cols, sink};
  const int64_t k = plan.width * plan.cols;
  if (stream.runs_inline()) {
    kernels::launch_host(label, n, blocks);
    if (plan.passes() > 1) kernels::launch_host(label, k, finish);
    return;
  }
  stream.enqueue_kernel(label, [label, n, blocks] { kernels::launch_host(label, n, blocks); });
  if (plan.passes() > 1) stream.enqueue_kernel(label, [label, k, finish] { kernels::launch_host(label, k, finish); });
}

// The per-segment sums of `src` by `plan` into `sink`; `tables` (kernels/segment_sums.hpp) and
// `partial` (plan.partial_size() doubles) where the stream's device reads them.
template <class Source, class Sink>
void launch_segment_sums(Stream& stream, const char* label, const kernels::SegmentSumsPlan& plan,
                         const kernels::SegmentTables& tables, const Source& src, double* partial, const Sink& sink) {
  ST_CHECK(plan.width == Source::kWidth, "segment sums '", label, "': its plan sums ", plan.width,
           " values per element, its source ", Source::kWidth);
  if (plan.segments == 0) return;
  if (plan.blocks > 0) stream.counters().call();
  stream.counters().call();
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda_segment_sums(cuda_stream, label, plan, tables, src, partial, sink);
    return;
  }
#endif
  const kernels::SegmentSumsBlock<Source> blocks{plan, tables, src, partial};
  const kernels::SegmentSumsFinish<Sink> finish{partial, tables.first_block, plan.segments, plan.width, sink};
  const int64_t n = plan.blocks, k = plan.width * plan.segments;
  if (stream.runs_inline()) {
    kernels::launch_host(label, n, blocks);
    kernels::launch_host(label, k, finish);
    return;
  }
  stream.enqueue_kernel(label, [label, n, blocks] { kernels::launch_host(label, n, blocks); });
  stream.enqueue_kernel(label, [label, k, finish] { kernels::launch_host(label, k, finish); });
}

// The per-row reduction functor f (operator()(Row&), kernels/reduction.hpp) over plan.rows rows.
template <class F>
void launch_row_reductions(Stream& stream, const char* label, const kernels::RowsPlan& plan, const F& f) {
  if (plan.rows <= 0) return;
  stream.counters().call();
#if SCALETRAIN_HAVE_CUDA
  if (void* cuda_stream = stream.cuda_handle()) {
    kernels::launch_cuda_row_reductions(cuda_stream, label, plan, f);
    return;
  }
#endif
  const kernels::RowsOnHost<F> rows{plan, f};
  if (stream.runs_inline()) {
    kernels::launch_host(label, plan.rows, rows);
    return;
  }
  stream.enqueue_kernel(label, [label, plan, rows] { kernels::launch_host(label, plan.rows, rows); });
}

}  // namespace scaletrain
