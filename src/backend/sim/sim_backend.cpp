// The simulated device: device memory separate from the host's (a Device::sim tag that host
// accessors refuse, a capacity, poisoned on allocation), a compute and a copy stream with worker
// threads, and the CPU backend's operators queued on those streams, with the optional capabilities
// they have there (a convolution taking over the max pooling after it). It runs here the
// orchestration the CUDA backend runs on a GPU.
#include <atomic>
#include <cstring>
#include <memory>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/sim/sim_stream.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {
namespace {

// Bytes in use against a capacity; shared with the release functions of the tensors it handed out.
struct SimMemory {
  std::atomic<int64_t> used{0};
  int64_t capacity = 0;  // 0: unlimited
};

// Convolution and inner product share one interface shape (forward, backward_data,
// backward_weights): each call is queued on the op's stream.
template <class Op>
class SimWeightedOp final : public Op {
 public:
  SimWeightedOp(std::unique_ptr<Op> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, const void* w, const float* b, void* y) override {
    s_.enqueue([op = op_.get(), x, w, b, y] { op->forward(x, w, b, y); });
  }
  void backward_data(const void* dy, const void* w, void* dx) override {
    s_.enqueue([op = op_.get(), dy, w, dx] { op->backward_data(dy, w, dx); });
  }
  void backward_weights(const void* x, const void* dy, float* dw, float* db) override {
    s_.enqueue([op = op_.get(), x, dy, dw, db] { op->backward_weights(x, dy, dw, db); });
  }

 private:
  std::unique_ptr<Op> op_;
  Stream& s_;
};

// The host backend's separable convolution (fused or composed, as on cpu), queued as one piece of work.
class SimSeparableConvOp final : public SeparableConvOp {
 public:
  SimSeparableConvOp(std::unique_ptr<SeparableConvOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, const void* w_dw, const void* w_pw, const float* b, void* mid, void* pre,
               void* y) override {
    s_.enqueue([=, op = op_.get()] { op->forward(x, w_dw, w_pw, b, mid, pre, y); });
  }
  void backward(const void* x, const void* mid, const void* pre, const void* y, const void* dy, const void* w_dw,
                const void* w_pw, void* dpre, void* dmid, float* dw_dw, float* dw_pw, float* db, void* dx) override {
    s_.enqueue(
        [=, op = op_.get()] { op->backward(x, mid, pre, y, dy, w_dw, w_pw, dpre, dmid, dw_dw, dw_pw, db, dx); });
  }
  // At build, before any call of the op is queued: the host op takes the pooling over as on cpu.
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return op_->absorb_pool(pool, pooled); }

 private:
  std::unique_ptr<SeparableConvOp> op_;
  Stream& s_;
};

// The host backend's activated convolution (fused or composed, as on cpu), queued as one piece of work.
class SimActivatedConvOp final : public ActivatedConvOp {
 public:
  SimActivatedConvOp(std::unique_ptr<ActivatedConvOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, const void* w, const float* b, void* pre, void* y) override {
    s_.enqueue([=, op = op_.get()] { op->forward(x, w, b, pre, y); });
  }
  void backward(const void* x, const void* pre, const void* y, const void* dy, const void* w, void* dpre, float* dw,
                float* db, void* dx) override {
    s_.enqueue([=, op = op_.get()] { op->backward(x, pre, y, dy, w, dpre, dw, db, dx); });
  }
  // At build, before any call of the op is queued: the host op takes the pooling over as on cpu.
  bool absorb_pool(const PoolShape& pool, void* pooled) override { return op_->absorb_pool(pool, pooled); }

 private:
  std::unique_ptr<ActivatedConvOp> op_;
  Stream& s_;
};

class SimPoolOp final : public PoolOp {
 public:
  SimPoolOp(std::unique_ptr<PoolOp> op, Stream& s) : op_(std::move(op)), s_(s) {}
  void forward(const void* x, void* y, bool training) override {
    s_.enqueue([op = op_.get(), x, y, training] { op->forward(x, y, training); });
  }
  void backward(const void* dy, void* dx) override {
    s_.enqueue([op = op_.get(), dy, dx] { op->backward(dy, dx); });
  }

 private:
  std::unique_ptr<PoolOp> op_;
  Stream& s_;
};

// The host op queued on `stream` by a Sim*Op wrapper, which reports the host op's implementation.
template <class Wrapper, class Op>
std::unique_ptr<Wrapper> queued(std::unique_ptr<Op> host_op, Stream& stream) {
  std::string implementation = host_op->implementation();
  auto op = std::make_unique<Wrapper>(std::move(host_op), stream);
  op->set_implementation(std::move(implementation));
  return op;
}

sim::SimStreamOptions stream_options(const BackendOptions& o, int threads, uint64_t salt) {
  sim::SimStreamOptions so;
  so.omp_threads = threads;
  so.max_delay_us = o.sim_max_delay_us;
  so.delay_seed = o.sim_delay_seed * 0x9E3779B97F4A7C15ull + salt;
  return so;
}

class SimBackend final : public Backend {
 public:
  explicit SimBackend(const BackendOptions& o)
      : o_(o),
        host_(make_cpu_backend(o.threads, o.onednn_only, o.bf16_gemm)),
        memory_(std::make_shared<SimMemory>()),
        compute_("compute", stream_options(o, host_->num_threads(), 1)),
        copy_("copy", stream_options(o, host_->num_threads(), 2)),
        comm_("comm", stream_options(o, 1, 3)) {
    ST_CHECK(o.sim_memory_bytes >= 0, "run.sim_memory_mb must be >= 0");
    ST_CHECK(o.sim_max_delay_us >= 0, "testing.sim_delay_us must be >= 0");
    memory_->capacity = o.sim_memory_bytes;
  }
  ~SimBackend() override {
    try {
      synchronize();
    } catch (...) {
      // Already reported by the call that saw it; the streams' workers still drain their queues.
    }
  }

  Device device() const override { return Device::sim; }
  std::string description() const override {
    std::string d = "sim (simulated device on " + host_->description();
    if (memory_->capacity > 0) d += ", " + std::to_string(memory_->capacity >> 20) + " MiB";
    if (o_.sim_max_delay_us > 0) d += ", delays up to " + std::to_string(o_.sim_max_delay_us) + " us";
    return d + ")";
  }
  int num_threads() const override { return host_->num_threads(); }

  Tensor empty(Shape shape, DType dtype, std::string name) override {
    const int64_t bytes = shape_numel(shape) * static_cast<int64_t>(dtype_size(dtype));
    const int64_t before = memory_->used.fetch_add(bytes);
    if (memory_->capacity > 0 && before + bytes > memory_->capacity) {
      memory_->used.fetch_sub(bytes);
      ST_FAIL("sim device out of memory: tensor '", name, "' ", shape_string(shape), " ", dtype_name(dtype), " needs ",
              bytes, " bytes, ", before, " of ", memory_->capacity,
              " bytes are in use (raise run.sim_memory_mb or lower train.batch)");
    }
    void* p = aligned_host_alloc(static_cast<size_t>(bytes));
    // Uninitialized device memory reads as NaN, not as the zeros a fresh host page happens to hold.
    std::memset(p, 0xff, static_cast<size_t>(bytes));
    std::shared_ptr<SimMemory> mem = memory_;
    return Tensor::adopt(p, static_cast<size_t>(bytes), std::move(shape), dtype, Device::sim, std::move(name),
                         [mem, bytes](void* q) {
                           aligned_host_free(q);
                           mem->used.fetch_sub(bytes);
                         });
  }
  Tensor pinned(Shape shape, DType dtype, std::string name) override {
    return Tensor(std::move(shape), dtype, std::move(name));
  }
  int64_t memory_in_use() const override { return memory_->used.load(); }

  Stream& compute_stream() override { return compute_; }
  Stream& copy_stream() override { return copy_; }
  Stream& comm_stream() override { return comm_; }
  std::unique_ptr<Event> make_event(std::string label) override {
    const bool ignored = !o_.sim_ignore_events.empty() && label.find(o_.sim_ignore_events) != std::string::npos;
    return std::make_unique<sim::SimEvent>(std::move(label), ignored);
  }

  PrecisionSupport precision_support(DType t) const override { return host_->precision_support(t); }
  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* s) override {
    return queued<SimWeightedOp<ConvOp>>(host_->make_conv(shape), s ? *s : compute_);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape, Stream* s) override {
    return queued<SimWeightedOp<InnerProductOp>>(host_->make_inner_product(shape), s ? *s : compute_);
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* s) override {
    return queued<SimPoolOp>(host_->make_pool(shape), s ? *s : compute_);
  }
  std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                       Stream* s) override {
    return queued<SimActivatedConvOp>(host_->make_activated_conv(shape, activation), s ? *s : compute_);
  }
  std::unique_ptr<SeparableConvOp> make_separable_conv(const SeparableConvShape& shape, Stream* s) override {
    return queued<SimSeparableConvOp>(host_->make_separable_conv(shape), s ? *s : compute_);
  }

  // The host backend's: the simulated device runs the host's operators.
  Bf16GemmTuning* bf16_gemm_tuning() override { return host_->bf16_gemm_tuning(); }

  void synchronize() override {
    copy_.synchronize();
    comm_.synchronize();
    compute_.synchronize();
  }

 private:
  BackendOptions o_;
  std::unique_ptr<Backend> host_;  // creates the operators the streams run
  std::shared_ptr<SimMemory> memory_;
  sim::SimStream compute_;
  sim::SimStream copy_;
  sim::SimStream comm_;
};

}  // namespace

std::unique_ptr<Backend> make_sim_backend(const BackendOptions& options) {
  return std::make_unique<SimBackend>(options);
}

}  // namespace scaletrain
