// Backend: where a model's tensors live and who runs its heavy operators. The CPU backend uses
// oneDNN (backend/cpu); the CUDA backend (backend/cuda) uses cuDNN and cuBLASLt. Custom element-wise
// kernels are not here: they are the functors of kernels/, launched through kernels/launch.hpp.
#pragma once
#include <memory>
#include <string>

#include "scaletrain/backend/ops.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // "cpu (oneDNN 2.6.3, 2 threads, avx512_core_bf16)"
  virtual std::string description() const = 0;
  // Threads the backend's heavy operators use.
  virtual int num_threads() const = 0;

  virtual std::unique_ptr<ConvOp> make_conv(const ConvShape& shape) = 0;
  virtual std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape) = 0;
  virtual std::unique_ptr<PoolOp> make_pool(const PoolShape& shape) = 0;

  // Waits for all work queued on this backend (no-op on the CPU).
  virtual void synchronize() = 0;
};

// The CPU backend: oneDNN primitives with as many threads as this process's affinity mask
// allows (or `threads` if > 0).
std::unique_ptr<Backend> make_cpu_backend(int threads = 0);

}  // namespace scaletrain
