// CudaOpContext: the cuDNN and cuBLASLt handles, per-stream workspaces and the algorithm log shared
// by the CUDA backend's operators.
#include "scaletrain/backend/cuda/cuda_op_context.hpp"

#include <algorithm>

#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_memory.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {

CudaOpContext::CudaOpContext(int device, std::shared_ptr<CudaMemory> memory, CudaOpSettings settings)
    : device_(device), memory_(std::move(memory)), settings_(settings) {
  ST_CUDA_CHECK(cudaSetDevice(device_));
  multiprocessor_count_ = cuda::multiprocessor_count(device_);
  ST_CUDNN_CHECK(cudnnCreate(&cudnn_));
  ST_CUBLAS_CHECK(cublasLtCreate(&cublaslt_));
}

CudaOpContext::~CudaOpContext() {
  workspaces_.clear();
  if (cublaslt_) cublasLtDestroy(cublaslt_);
  if (cudnn_) cudnnDestroy(cudnn_);
}

cudnnHandle_t CudaOpContext::cudnn(cudaStream_t stream) {
  ST_CUDNN_CHECK(cudnnSetStream(cudnn_, stream));
  counters_->call();
  return cudnn_;
}

int64_t CudaOpContext::workspace_limit(cudaStream_t stream) const {
  if (!settings_.workspace_auto) return settings_.workspace_limit_bytes;
  use_device(device_);
  size_t free = 0, total = 0;
  ST_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  const AllocatorStats stats = memory_->stats();
  return auto_workspace_limit({static_cast<int64_t>(free), stats.bytes_cached, static_cast<int64_t>(total),
                               workspace_bytes(stream)});
}

AlgorithmMode CudaOpContext::algorithm_mode() const {
  std::lock_guard lock(mu_);
  return pinned_from_.empty() ? settings_.algorithms : AlgorithmMode::pinned;
}

void CudaOpContext::choose_algorithms(AlgorithmMode mode) {
  ST_CHECK(mode != AlgorithmMode::pinned, "choose_algorithms takes heuristic or timed; pin() pins a book");
  std::lock_guard lock(mu_);
  settings_.algorithms = mode;
  pinned_ = {};
  pinned_from_.clear();
  made_ = {};
  choices_.clear();
}

void CudaOpContext::pin(AlgorithmBook book, std::string from) {
  ST_CHECK(!from.empty(), "a pinned algorithm book needs to say where it came from");
  std::lock_guard lock(mu_);
  pinned_ = std::move(book);
  pinned_from_ = std::move(from);
  made_ = {};
  choices_.clear();
}

CudaOpContext::AlgorithmState CudaOpContext::save_algorithms() const {
  std::lock_guard lock(mu_);
  return {settings_, pinned_, made_, pinned_from_, choices_};
}

void CudaOpContext::restore_algorithms(AlgorithmState state) {
  std::lock_guard lock(mu_);
  settings_ = state.settings;
  pinned_ = std::move(state.pinned);
  made_ = std::move(state.made);
  pinned_from_ = std::move(state.pinned_from);
  choices_ = std::move(state.choices);
}

std::optional<AlgorithmRecord> CudaOpContext::made_record(const std::string& key) const {
  std::lock_guard lock(mu_);
  const AlgorithmRecord* r = made_.find(key);
  return r ? std::optional<AlgorithmRecord>(*r) : std::nullopt;
}

bool CudaOpContext::record(AlgorithmRecord r) {
  std::lock_guard lock(mu_);
  if (made_.find(r.key)) return false;
  made_.put(std::move(r));
  return true;
}

AlgorithmBook CudaOpContext::made() const {
  AlgorithmBook book;
  {
    std::lock_guard lock(mu_);
    book = made_;
  }
  book.library = library_versions();
  book.device = device_name(device_);
  return book;
}

void CudaOpContext::remember(const ConvShape& shape, cudaStream_t stream) {
  std::lock_guard lock(mu_);
  for (const auto& [s, st] : conv_shapes_)
    if (st == stream && s.to_string() == shape.to_string()) return;
  conv_shapes_.emplace_back(shape, stream);
}

void CudaOpContext::remember(const InnerProductShape& shape, cudaStream_t stream) {
  std::lock_guard lock(mu_);
  for (const auto& [s, st] : inner_product_shapes_)
    if (st == stream && s.to_string() == shape.to_string()) return;
  inner_product_shapes_.emplace_back(shape, stream);
}

std::vector<std::pair<ConvShape, cudaStream_t>> CudaOpContext::conv_shapes() const {
  std::lock_guard lock(mu_);
  return conv_shapes_;
}

std::vector<std::pair<InnerProductShape, cudaStream_t>> CudaOpContext::inner_product_shapes() const {
  std::lock_guard lock(mu_);
  return inner_product_shapes_;
}

void CudaOpContext::reserve_workspace(cudaStream_t stream, int64_t bytes, const std::string& who) {
  const int64_t limit = workspace_limit(stream);
  ST_CHECK(bytes <= limit, who, " needs ", bytes, " bytes of workspace, more than ",
           workspace_setting_text(settings_.workspace_auto, limit), " allows");
  std::lock_guard lock(mu_);
  Tensor& ws = workspaces_[stream];
  if (bytes <= 0 || static_cast<int64_t>(ws.bytes()) >= bytes) return;
  // Round up to 1 MiB so that a series of slightly larger requests does not reallocate each time.
  const int64_t rounded = std::min(limit, ((bytes + (1 << 20) - 1) >> 20) << 20);
  ws = memory_->empty({std::max(rounded, bytes)}, DType::u8, "operator workspace");
}

void* CudaOpContext::workspace(cudaStream_t stream) const {
  std::lock_guard lock(mu_);
  auto it = workspaces_.find(stream);
  return it == workspaces_.end() || it->second.bytes() == 0 ? nullptr : it->second.device_raw();
}

int64_t CudaOpContext::workspace_bytes(cudaStream_t stream) const {
  std::lock_guard lock(mu_);
  auto it = workspaces_.find(stream);
  return it == workspaces_.end() ? 0 : static_cast<int64_t>(it->second.bytes());
}

Tensor CudaOpContext::buffer(Shape shape, DType dtype, std::string name) {
  return memory_->empty(std::move(shape), dtype, std::move(name));
}

void CudaOpContext::log_choice(std::string line) {
  std::lock_guard lock(mu_);
  choices_.push_back(std::move(line));
}

std::vector<std::string> CudaOpContext::choices() const {
  std::lock_guard lock(mu_);
  return choices_;
}

}  // namespace scaletrain::cuda
