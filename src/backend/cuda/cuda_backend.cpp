// The CUDA backend: device selection and description, compute/copy/comm streams, device-timed
// events, cached device memory and pinned buffers, async copies and fills, and the heavy operators
// on cuDNN (convolution, pooling) and cuBLASLt (inner product) through a shared CudaOpContext.
#include <cstdlib>
#include <memory>

#include "scaletrain/backend/algorithm_tuning.hpp"
#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cuda/cuda_backend.hpp"
#include "scaletrain/backend/cuda/cuda_device.hpp"
#include "scaletrain/backend/cuda/cuda_event.hpp"
#include "scaletrain/backend/cuda/cuda_memory.hpp"
#include "scaletrain/backend/cuda/cuda_op_context.hpp"
#include "scaletrain/backend/cuda/cuda_stream.hpp"
#include "scaletrain/backend/cuda/cupti_kernel_trace.hpp"
#include "scaletrain/backend/cuda/device_clock.hpp"
#include "scaletrain/backend/device_selection.hpp"
#include "scaletrain/core/check_cuda.hpp"

namespace scaletrain {
namespace {

// The device this rank takes (backend/device_selection.hpp), made current on this thread.
int select_and_use_device(const BackendOptions& o) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  const int device = select_device(o.local_rank, o.local_size, cuda::visible_device_count(), env ? env : "");
  ST_CUDA_CHECK(cudaSetDevice(device));
  return device;
}

cuda::CudaOpSettings op_settings(const BackendOptions& o) {
  return {o.deterministic, o.allow_tf32, o.workspace_limit_bytes, o.workspace_auto,
          o.time_algorithms ? AlgorithmMode::timed : AlgorithmMode::heuristic};
}

class CudaBackend final : public Backend, public AlgorithmTuning {
 public:
  explicit CudaBackend(const BackendOptions& o)
      : device_(select_and_use_device(o)),
        description_(cuda::describe_device(device_)),
        pci_bus_id_(cuda::pci_bus_id(device_)),
        name_(cuda::device_name(device_)),
        clock_(std::make_shared<cuda::DeviceClock>(device_)),
        compute_("compute", device_),
        copy_("copy", device_),
        comm_("comm", device_),
        memory_(std::make_shared<cuda::CudaMemory>(device_, "cuda device " + std::to_string(device_) + " (PCI " +
                                                                pci_bus_id_ + ")",
                                                   std::vector<cudaStream_t>{compute_.handle(), copy_.handle(),
                                                                             comm_.handle()})),
        ops_(std::make_unique<cuda::CudaOpContext>(device_, memory_, op_settings(o))) {
    for (cuda::CudaStream* s : {&compute_, &copy_, &comm_}) s->count_into(counters());
    ops_->count_into(counters());
  }
  ~CudaBackend() override {
    try {
      synchronize();
    } catch (...) {
      // Already reported by the call that saw it.
    }
    ops_.reset();
    memory_->close();  // tensors that outlive the backend free their memory at once
  }

  Device device() const override { return Device::cuda; }
  std::string description() const override { return description_; }
  int num_threads() const override { return 1; }  // the host thread that drives the device
  std::string device_id() const override { return pci_bus_id_; }
  std::string accelerator_name() const override { return name_; }
  int multiprocessor_count() const override { return ops_->multiprocessor_count(); }

  Tensor empty(Shape shape, DType dtype, std::string name) override {
    counters().allocation();
    return memory_->empty(std::move(shape), dtype, std::move(name));
  }
  Tensor pinned(Shape shape, DType dtype, std::string name) override {
    return memory_->pinned(std::move(shape), dtype, std::move(name));
  }
  int64_t memory_in_use() const override { return memory_->stats().bytes_in_use; }
  AllocatorStats allocator_stats() const { return memory_->stats(); }
  std::unique_ptr<BatchNormOp> cudnn_bf16_batch_norm_probe(const BatchNormShape& shape) {
    return cuda::make_cudnn_bf16_batch_norm_probe(*ops_, shape, compute_.handle());
  }

  Stream& compute_stream() override { return compute_; }
  Stream& copy_stream() override { return copy_; }
  Stream& comm_stream() override { return comm_; }
  std::unique_ptr<Event> make_event(std::string label) override {
    auto e = std::make_unique<cuda::CudaEvent>(std::move(label), device_, clock_);
    e->count_into(counters());
    return e;
  }

  void copy_async(Stream& stream, const Tensor& dst, const Tensor& src) override;
  void fill_zero_async(Stream& stream, const Tensor& dst) override;

  PrecisionSupport precision_support(DType t) const override {
    switch (t) {
      case DType::f32: return {true, "f32"};
      case DType::bf16: return {true, "bf16 native, f32 accumulation"};
      case DType::f16: return {true, "f16 native, f32 accumulation"};
      default: break;
    }
    ST_FAIL("the cuda backend computes in f32, bf16 or f16, not ", dtype_name(t));
  }
  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* stream) override {
    return cuda::make_cudnn_conv(*ops_, shape, handle_of(stream ? *stream : compute_));
  }
  // A convolution with a bias takes it, and a ReLU after it, into cuDNN's fused forward where cuDNN runs
  // it; the composed op applies what the convolution does not.
  std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                       Stream* stream) override {
    Stream& s = stream ? *stream : compute_;
    if (!shape.bias) return compose_activated_conv(shape, activation, make_conv(shape, &s), s);
    bool activates = false;
    auto conv = cuda::make_cudnn_conv_with_epilogue(*ops_, shape, handle_of(s), activation, &activates);
    if (activates) return compose_post_activated_conv(shape, activation, std::move(conv), s);
    return compose_activated_conv(shape, activation, std::move(conv), s);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape, Stream* stream) override {
    return cuda::make_cublaslt_inner_product(*ops_, shape, handle_of(stream ? *stream : compute_));
  }
  std::unique_ptr<MatmulOp> make_general_matmul(const MatmulShape& shape, Stream* stream) override {
    return cuda::make_cublaslt_matmul(*ops_, shape, handle_of(stream ? *stream : compute_));
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* stream) override {
    return cuda::make_cudnn_pool(*ops_, shape, handle_of(stream ? *stream : compute_));
  }
  std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormShape& shape, Stream* stream) override {
    return cuda::make_cudnn_batch_norm(*ops_, shape, handle_of(stream ? *stream : compute_));
  }
  std::vector<std::string> operator_choices() const override { return ops_->choices(); }

  AlgorithmTuning* algorithm_tuning() override { return this; }
  void choose_algorithms(AlgorithmMode mode) override { ops_->choose_algorithms(mode); }
  void pin_algorithms(AlgorithmBook book, std::string from) override { ops_->pin(std::move(book), std::move(from)); }
  AlgorithmBook algorithms() const override { return ops_->made(); }
  AlgorithmBook time_algorithms() override;

  std::unique_ptr<KernelTrace> make_kernel_trace(std::string& why_not) override {
    return cuda::make_cupti_kernel_trace(why_not);
  }

  void drain_all() override {
    copy_.drain();
    comm_.drain();
    compute_.drain();
  }

 private:
  cudaStream_t handle_of(Stream& s) const {
    void* h = s.cuda_handle();
    ST_CHECK(h != nullptr, "cuda backend: stream '", s.name(), "' is not a CUDA stream");
    return static_cast<cudaStream_t>(h);
  }

  int device_;
  std::string description_;
  std::string pci_bus_id_;
  std::string name_;
  std::shared_ptr<cuda::DeviceClock> clock_;
  cuda::CudaStream compute_;
  cuda::CudaStream copy_;
  cuda::CudaStream comm_;
  std::shared_ptr<cuda::CudaMemory> memory_;
  std::unique_ptr<cuda::CudaOpContext> ops_;
};

// Every shape made so far made again in timed mode (its op times and records its choices, then is
// released); the mode and book before the call are restored.
AlgorithmBook CudaBackend::time_algorithms() {
  cuda::CudaOpContext::AlgorithmState before = ops_->save_algorithms();
  ops_->choose_algorithms(AlgorithmMode::timed);
  try {
    for (const auto& [shape, stream] : ops_->conv_shapes()) (void)cuda::make_cudnn_conv(*ops_, shape, stream);
    for (const auto& [shape, stream] : ops_->inner_product_shapes())
      (void)cuda::make_cublaslt_inner_product(*ops_, shape, stream);
  } catch (...) {
    ops_->restore_algorithms(std::move(before));
    throw;
  }
  AlgorithmBook timed = ops_->made();
  ops_->restore_algorithms(std::move(before));
  return timed;
}

void CudaBackend::copy_async(Stream& stream, const Tensor& dst, const Tensor& src) {
  ST_CHECK(dst.bytes() == src.bytes(), "copy from '", src.name(), "' (", src.bytes(), " bytes) to '", dst.name(), "' (",
           dst.bytes(), " bytes): sizes differ");
  if (dst.bytes() == 0 || dst.device_raw() == src.device_raw()) return;
  (void)count_copy(counters(), dst, src);
  cuda::use_device(device_);
  // Unified addressing: the runtime tells host from device memory. A pageable host source is staged
  // before the call returns; a pageable host destination is written before it returns.
  ST_CUDA_CHECK(cudaMemcpyAsync(dst.device_raw(), src.device_raw(), dst.bytes(), cudaMemcpyDefault, handle_of(stream)));
}

void CudaBackend::fill_zero_async(Stream& stream, const Tensor& dst) {
  if (dst.bytes() == 0) return;
  if (dst.on_host()) {
    Backend::fill_zero_async(stream, dst);  // a host function in stream order
    return;
  }
  counters().call();
  cuda::use_device(device_);
  ST_CUDA_CHECK(cudaMemsetAsync(dst.device_raw(), 0, dst.bytes(), handle_of(stream)));
}

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

int visible_gpu_count() { return cuda::visible_device_count(); }

std::string gpu_library_versions() { return cuda::library_versions(); }

AllocatorStats cuda::allocator_stats(Backend& backend) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  ST_CHECK(b != nullptr, "allocator statistics: backend '", backend.description(), "' is not a CUDA backend");
  return b->allocator_stats();
}

std::unique_ptr<BatchNormOp> cuda::cudnn_bf16_batch_norm_probe(Backend& backend, const BatchNormShape& shape) {
  auto* b = dynamic_cast<CudaBackend*>(&backend);
  ST_CHECK(b != nullptr, "cuDNN bf16 batch normalization probe: backend '", backend.description(),
           "' is not a CUDA backend");
  return b->cudnn_bf16_batch_norm_probe(shape);
}

}  // namespace scaletrain
