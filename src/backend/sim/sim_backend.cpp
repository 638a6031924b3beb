// The simulated device: device memory separate from the host's (a Device::sim tag that host
// accessors refuse, a capacity, poisoned on allocation), a compute and a copy stream with worker
// threads, and the CPU backend's operators queued on those streams, with the optional capabilities
// they have there (a convolution taking over the max pooling after it), its convolutions taking OHWI
// filters as cuDNN's do. It runs here the orchestration the CUDA backend runs on a GPU.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/queued_ops.hpp"
#include "scaletrain/backend/sim/sim_filter_layout.hpp"
#include "scaletrain/backend/sim/sim_stream.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {
namespace {

// Bytes in use against a capacity; shared with the release functions of the tensors it handed out.
// Released memory is freed in the compute stream's order while the backend lives: after the work
// queued before the release has run, as the CUDA backend's caching allocator hands a block out again
// on its stream only after that work (a model destroyed with a launch still queued frees nothing
// under it).
struct SimMemory {
  std::atomic<int64_t> used{0};
  int64_t capacity = 0;  // 0: unlimited
  std::mutex mu;
  sim::SimStream* order = nullptr;  // the compute stream; null once the backend is going

  void release(void* p, int64_t bytes) {
    used.fetch_sub(bytes);
    std::lock_guard lock(mu);
    if (order && order->enqueue_quietly([p] { aligned_host_free(p); })) return;
    aligned_host_free(p);
  }
};

// The kernel trace of the simulated device: its streams' labelled work items (sim_stream.hpp).
class SimKernelTrace final : public KernelTrace {
 public:
  SimKernelTrace(Backend& backend, std::vector<sim::SimStream*> streams)
      : backend_(backend), streams_(std::move(streams)) {}
  ~SimKernelTrace() override {
    for (sim::SimStream* s : streams_) s->trace_into(nullptr);
  }
  std::string source() const override { return "sim streams' work items, timed by their workers"; }
  void start() override {
    for (sim::SimStream* s : streams_) s->trace_into(&tally_);
  }
  void stop() override {
    backend_.synchronize();
    for (sim::SimStream* s : streams_) s->trace_into(nullptr);
  }
  std::vector<KernelRecord> take() override { return tally_.take(); }

 private:
  Backend& backend_;
  std::vector<sim::SimStream*> streams_;
  sim::SimKernelTally tally_;
};

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
    memory_->order = &compute_;
    for (sim::SimStream* s : {&compute_, &copy_, &comm_}) s->count_into(counters());
  }
  ~SimBackend() override {
    try {
      synchronize();
    } catch (...) {
      // Already reported by the call that saw it; the streams' workers still drain their queues.
    }
    std::lock_guard lock(memory_->mu);
    memory_->order = nullptr;  // frees queued until now still run as the compute stream's worker drains
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
    counters().allocation();
    void* p = aligned_host_alloc(static_cast<size_t>(bytes));
    // Uninitialized device memory reads as NaN, not as the zeros a fresh host page happens to hold.
    std::memset(p, 0xff, static_cast<size_t>(bytes));
    std::shared_ptr<SimMemory> mem = memory_;
    return Tensor::adopt(p, static_cast<size_t>(bytes), std::move(shape), dtype, Device::sim, std::move(name),
                         [mem, bytes](void* q) { mem->release(q, bytes); });
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
    auto e = std::make_unique<sim::SimEvent>(std::move(label), ignored);
    e->count_into(counters());
    return e;
  }

  PrecisionSupport precision_support(DType t) const override { return host_->precision_support(t); }
  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* s) override {
    return queued_ops::wrap(host_->make_conv(shape), s ? *s : compute_);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape, Stream* s) override {
    return queued_ops::wrap(host_->make_inner_product(shape), s ? *s : compute_);
  }
  std::unique_ptr<MatmulOp> make_general_matmul(const MatmulShape& shape, Stream* s) override {
    return queued_ops::wrap(host_->make_matmul(shape), s ? *s : compute_);
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* s) override {
    return queued_ops::wrap(host_->make_pool(shape), s ? *s : compute_);
  }
  std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                       Stream* s) override {
    return queued_ops::wrap(sim::with_ohwi_filters(host_->make_activated_conv(shape, activation), shape),
                            s ? *s : compute_);
  }
  std::unique_ptr<SeparableConvOp> make_separable_conv(const SeparableConvShape& shape, Stream* s) override {
    return queued_ops::wrap(host_->make_separable_conv(shape), s ? *s : compute_);
  }

  std::unique_ptr<KernelTrace> make_kernel_trace(std::string&) override {
    return std::make_unique<SimKernelTrace>(*this, std::vector<sim::SimStream*>{&compute_, &copy_, &comm_});
  }

  // The host backend's: the simulated device runs the host's operators.
  Bf16GemmTuning* bf16_gemm_tuning() override { return host_->bf16_gemm_tuning(); }

  void drain_all() override {
    copy_.drain();
    comm_.drain();
    compute_.drain();
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
