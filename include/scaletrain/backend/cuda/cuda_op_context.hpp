// CudaOpContext: what the CUDA backend's heavy operators share. One cuDNN handle and one cuBLASLt
// handle per backend, the selection settings (deterministic, TF32, workspace limit or the auto rule),
// how algorithms are chosen (heuristic, timed, or pinned to a book: backend/algorithm_book.hpp) and
// the book of what the ops made run, the shapes made (for AlgorithmTuning::time_algorithms), one
// scratch workspace per stream sized at operator creation to the largest need (so nothing is
// allocated in the step loop), and the log of the algorithms chosen. The operators themselves live in
// cudnn_conv.cpp, cudnn_pool.cpp, cudnn_batch_norm.cpp and cublaslt_inner_product.cpp.
#pragma once
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "scaletrain/backend/algorithm_book.hpp"
#include "scaletrain/backend/device_counters.hpp"
#include "scaletrain/backend/ops.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"
#include "scaletrain/kernels/packs.hpp"

namespace scaletrain::cuda {

class CudaMemory;
class CudaStream;

struct CudaOpSettings {
  bool deterministic = true;
  bool allow_tf32 = false;
  int64_t workspace_limit_bytes = int64_t{512} << 20;  // when !workspace_auto
  bool workspace_auto = false;                          // the limit: auto_workspace_limit at each choice
  AlgorithmMode algorithms = AlgorithmMode::timed;      // heuristic or timed (pinned: pin())
};

class CudaOpContext {
 public:
  CudaOpContext(int device, std::shared_ptr<CudaMemory> memory, CudaOpSettings settings);
  ~CudaOpContext();
  CudaOpContext(const CudaOpContext&) = delete;
  CudaOpContext& operator=(const CudaOpContext&) = delete;

  int device() const { return device_; }
  // The device's SMs, which reduction plans spread over (kernels/reduction.hpp).
  int multiprocessor_count() const { return multiprocessor_count_; }
  const CudaOpSettings& settings() const { return settings_; }
  // The most workspace an algorithm chosen now for `stream` may use: the fixed limit, or the auto
  // rule on the device's memory now (the stream's workspace counted as available).
  int64_t workspace_limit(cudaStream_t stream) const;

  // How ops made from now on choose: heuristic or timed; pin(): the records of `book`. Each clears
  // the book of what the ops made run, and the log of choices (the ops made next log theirs).
  AlgorithmMode algorithm_mode() const;
  void choose_algorithms(AlgorithmMode mode);
  void pin(AlgorithmBook book, std::string from);
  // The pinned book and where it came from ("run.cudnn_algorithms = FILE"), for pinned_record.
  const AlgorithmBook& pinned() const { return pinned_; }
  const std::string& pinned_from() const { return pinned_from_; }
  // What the ops made run: a record per problem (identical layers share it: made_record finds it
  // first). record: false where the key has one already (kept).
  std::optional<AlgorithmRecord> made_record(const std::string& key) const;
  bool record(AlgorithmRecord r);
  AlgorithmBook made() const;
  // The mode, pinned book, made book and log, saved and put back around a timing of every shape.
  struct AlgorithmState {
    CudaOpSettings settings;
    AlgorithmBook pinned, made;
    std::string pinned_from;
    std::vector<std::string> choices;
  };
  AlgorithmState save_algorithms() const;
  void restore_algorithms(AlgorithmState state);
  // The shapes of the ops made, each once, with the stream it was made for.
  void remember(const ConvShape& shape, cudaStream_t stream);
  void remember(const InnerProductShape& shape, cudaStream_t stream);
  std::vector<std::pair<ConvShape, cudaStream_t>> conv_shapes() const;
  std::vector<std::pair<InnerProductShape, cudaStream_t>> inner_product_shapes() const;
  // The cuDNN handle, bound to `stream` (cudnnSetStream) for the call that follows, which it counts
  // as one call (backend/device_counters.hpp).
  cudnnHandle_t cudnn(cudaStream_t stream);
  // The cuBLASLt handle for one call, counted.
  cublasLtHandle_t cublaslt() {
    counters_->call();
    return cublaslt_;
  }
  // The backend's counters, which the ops count their calls into; a functor launch counts one.
  void count_into(DeviceCounters& c) { counters_ = &c; }
  template <class F>
  void launch(cudaStream_t stream, const char* label, int64_t n, const F& f) {
    counters_->call();
    kernels::launch_cuda(stream, label, n, f);
  }
  // A contiguous element-wise functor, in packs where they fit (backend/launch.hpp's launch_elements).
  template <class F>
  void launch_elements(cudaStream_t stream, const char* label, int64_t n, const F& f) {
    if (kernels::element_packs_fit(n, f)) {
      launch(stream, label, n / kernels::kChannelPack, kernels::ElementPacks<F, kernels::kChannelPack>{f});
    } else {
      launch(stream, label, n, f);
    }
  }
  // The column sums of `src` by `plan` (backend/launch.hpp's launch_column_sums), a call per pass.
  template <class Source, class Sink>
  void launch_column_sums(cudaStream_t stream, const char* label, const kernels::ColumnSumsPlan& plan,
                          const Source& src, double* partial, const Sink& sink) {
    for (int pass = 0; pass < plan.passes(); ++pass) counters_->call();
    kernels::launch_cuda_column_sums(stream, label, plan, src, partial, sink);
  }

  // At operator creation: the workspace of `stream` grows to at least `bytes` (at most
  // workspace_limit; more is an Error naming `who`). The old buffer is released in stream order.
  void reserve_workspace(cudaStream_t stream, int64_t bytes, const std::string& who);
  // At a call: the workspace of `stream` (null when nothing was reserved) and its size.
  void* workspace(cudaStream_t stream) const;
  int64_t workspace_bytes(cudaStream_t stream) const;
  // Device memory an operator owns (a padded input, reordered weights), allocated at its creation;
  // also the scratch tensors of an algorithm search, released when it ends.
  Tensor buffer(Shape shape, DType dtype, std::string name);

  // A line for Backend::operator_choices (and the start-up log).
  void log_choice(std::string line);
  std::vector<std::string> choices() const;

 private:
  int device_;
  int multiprocessor_count_ = 0;
  DeviceCounters* counters_ = &DeviceCounters::unattached();
  std::shared_ptr<CudaMemory> memory_;
  CudaOpSettings settings_;
  cudnnHandle_t cudnn_ = nullptr;
  cublasLtHandle_t cublaslt_ = nullptr;
  std::map<cudaStream_t, Tensor> workspaces_;
  mutable std::mutex mu_;
  std::vector<std::string> choices_;
  AlgorithmBook pinned_;
  std::string pinned_from_;
  AlgorithmBook made_;
  std::vector<std::pair<ConvShape, cudaStream_t>> conv_shapes_;
  std::vector<std::pair<InnerProductShape, cudaStream_t>> inner_product_shapes_;
};

// The operators (each binds to `stream`; the context outlives them).
std::unique_ptr<ConvOp> make_cudnn_conv(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream);
// The same, its forward adding the bias (and `activation` where it is ReLU) in cuDNN's fused call
// where cuDNN runs it for the shape and the chosen algorithm (cudnn_conv.cpp); *applies_activation:
// whether the forward applies the activation (the caller applies it otherwise).
std::unique_ptr<ConvOp> make_cudnn_conv_with_epilogue(CudaOpContext& ctx, const ConvShape& shape, cudaStream_t stream,
                                                      Activation activation, bool* applies_activation);
std::unique_ptr<PoolOp> make_cudnn_pool(CudaOpContext& ctx, const PoolShape& shape, cudaStream_t stream);
// Null where the plan keeps the shape on the layer's kernels (bf16).
std::unique_ptr<BatchNormOp> make_cudnn_batch_norm(CudaOpContext& ctx, const BatchNormShape& shape,
                                                   cudaStream_t stream);
// cuDNN's batch normalization in bf16, which make_cudnn_batch_norm leaves to the kernels until a GPU
// has said whether it runs and agrees (the GPU kit's question, tests/cuda/cudatest_cudnn_bf16_batch_norm.cpp).
std::unique_ptr<BatchNormOp> make_cudnn_bf16_batch_norm_probe(CudaOpContext& ctx, const BatchNormShape& shape,
                                                              cudaStream_t stream);
// The matmul family on cuBLASLt (cublaslt_matmul.cpp): one strided-batched cublasLtMatmul, the gelu
// epilogue a kernel after it; a bias only into an f32 output (a dense layer's bf16 forward lowers to
// the inner-product op, which stages its bias in the storage type).
std::unique_ptr<MatmulOp> make_cublaslt_matmul(CudaOpContext& ctx, const MatmulShape& shape, cudaStream_t stream);
std::unique_ptr<InnerProductOp> make_cublaslt_inner_product(CudaOpContext& ctx, const InnerProductShape& shape,
                                                            cudaStream_t stream);

}  // namespace scaletrain::cuda
