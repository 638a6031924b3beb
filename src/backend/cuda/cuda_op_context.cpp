// CudaOpContext: the cuDNN and cuBLASLt handles, per-stream workspaces and the algorithm log shared
// by the CUDA backend's operators.
#include "scaletrain/backend/cuda/cuda_op_context.hpp"

#include <algorithm>

#include "scaletrain/backend/cuda/cuda_memory.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain::cuda {

CudaOpContext::CudaOpContext(int device, std::shared_ptr<CudaMemory> memory, CudaOpSettings settings)
    : device_(device), memory_(std::move(memory)), settings_(settings) {
  ST_CUDA_CHECK(cudaSetDevice(device_));
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

void CudaOpContext::reserve_workspace(cudaStream_t stream, int64_t bytes, const std::string& who) {
  ST_CHECK(bytes <= settings_.workspace_limit_bytes, who, " needs ", bytes, " bytes of workspace, more than ",
           "run.cudnn_workspace_mb allows (", settings_.workspace_limit_bytes, " bytes)");
  std::lock_guard lock(mu_);
  Tensor& ws = workspaces_[stream];
  if (bytes <= 0 || static_cast<int64_t>(ws.bytes()) >= bytes) return;
  // Round up to 1 MiB so that a series of slightly larger requests does not reallocate each time.
  const int64_t rounded = std::min(settings_.workspace_limit_bytes, ((bytes + (1 << 20) - 1) >> 20) << 20);
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
