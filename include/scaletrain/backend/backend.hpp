// Backend: owns a compute device. It allocates device tensors and pinned host buffers, provides
// streams and events, asynchronous copies and fills, runs the heavy operators (created once per
// shape, bound to a stream) and, through backend/launch.hpp, the kernels/ functors on a stream.
// Nothing above backend/ dereferences device memory: a host read of a device value is an explicit
// copy_async to a host tensor followed by a synchronize.
//   cpu:  oneDNN; the device is the host, streams run work inline, events complete when recorded.
//   sim:  a CPU simulation of a GPU (backend/sim): separate device memory with a capacity, one
//         worker thread per stream, events that order streams. It runs the CUDA orchestration here.
//   cuda: cuDNN, cuBLASLt, CUDA streams and events (backend/cuda).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/backend/device_counters.hpp"
#include "scaletrain/backend/kernel_trace.hpp"
#include "scaletrain/backend/ops.hpp"
#include "scaletrain/backend/stream.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/kernels/reduction.hpp"

namespace scaletrain {

// automatic (run.device = auto): cuda where the build has it and a GPU is visible, else cpu.
enum class DeviceKind { automatic, cpu, sim, cuda };
DeviceKind parse_device_kind(const std::string& name);  // "auto" | "cpu" | "sim" | "cuda"; Error otherwise
std::string device_kind_name(DeviceKind k);

// What run.device = auto becomes on this process, and why ("2 GPUs visible", "no GPU visible",
// "this build has no CUDA backend"). Any other kind comes back as it is, with an empty reason.
struct DeviceResolution {
  DeviceKind kind;
  std::string reason;
};
DeviceResolution resolve_device_kind(DeviceKind requested);
// GPUs this process can use: 0 in a build without CUDA, or where the driver sees none.
int visible_gpu_count();
// The GPU libraries of a cuda build ("CUDA runtime 13.0 / driver none, cuDNN 9.19.0, NCCL 2.28.3,
// cuBLAS 13.1.0"); "" in a build without CUDA.
std::string gpu_library_versions();

// cpu, bf16 storage: how the GEMM-shaped operators (dense layers, 1x1 convolutions) compute.
// bf16: oneDNN's bf16 kernels (AVX512-BF16 dot products or AMX tiles). f32: f32 GEMMs on operands
// widened from bf16 (the same exact products, f32 accumulation; outputs rounded to bf16). automatic:
// the backend starts with bf16, and the trainer times both at the model's shapes and sets the faster
// (Backend::bf16_gemm_tuning, train/bf16_gemm_choice.hpp).
enum class Bf16GemmCompute { automatic, bf16, f32 };
Bf16GemmCompute parse_bf16_gemm_compute(const std::string& name);  // "auto" | "bf16" | "f32"; Error otherwise
std::string bf16_gemm_compute_name(Bf16GemmCompute c);

struct BackendOptions {
  DeviceKind kind = DeviceKind::cpu;
  int threads = 0;               // compute threads; 0: the cores this process is bound to
  bool onednn_only = false;      // cpu kernels: oneDNN primitives everywhere (no sgemm/direct fast paths)
  Bf16GemmCompute bf16_gemm = Bf16GemmCompute::automatic;  // cpu: see Bf16GemmCompute
  int64_t sim_memory_bytes = 0;  // sim: device capacity (0: unlimited)
  int64_t sim_max_delay_us = 0;  // sim: random delay of up to this before every op on every stream
  uint64_t sim_delay_seed = 1;
  // sim, tests only: events whose label contains this string never make anyone wait (to show that
  // the tests catch a missing wait). Empty: off.
  std::string sim_ignore_events;
  // cuda: this rank's place among the ranks of its host (device selection: backend/device_selection.hpp).
  int local_rank = 0;
  int local_size = 1;
  // cuda: how operators are chosen (run.deterministic, train.allow_tf32, run.cudnn_workspace_mb).
  // deterministic: only algorithms whose results do not depend on scheduling (no atomics in cuDNN's
  // backward-filter, no split-K with a nondeterministic reduction in cuBLASLt). allow_tf32: f32
  // convolutions and GEMMs may use TF32 tensor cores. workspace_limit_bytes: the most scratch memory
  // one operator's algorithm may use; workspace_auto: instead, what is free at the choice less a
  // margin (backend/algorithm_book.hpp). time_algorithms: ops time their candidates when made (a
  // training run makes them with the heuristic's choices and times through AlgorithmTuning).
  bool deterministic = true;
  bool allow_tf32 = false;
  int64_t workspace_limit_bytes = int64_t{512} << 20;
  bool workspace_auto = false;
  bool time_algorithms = true;
};

// How a backend computes in a storage type: natively (kernels in that type, f32 accumulation) or
// emulated (f32 compute on that storage, rounded to it at every op boundary). `note` is the line
// the start-up table and run.json show.
struct PrecisionSupport {
  bool native = true;
  std::string note;
};

class Bf16GemmTuning;
class AlgorithmTuning;
class SharedInnerProducts;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  // "cpu (oneDNN 2.6.3, 2 threads, ISA avx512_core_bf16)"
  virtual std::string description() const = 0;
  // Threads the backend's heavy operators use.
  virtual int num_threads() const = 0;
  // What identifies this rank's device among the devices of its host (cuda: the PCI bus id); empty
  // where ranks do not own a device. Two ranks of one host with the same id share a device.
  virtual std::string device_id() const { return {}; }
  // The accelerator this rank computes on ("NVIDIA H200"); empty on CPUs and the simulated device.
  virtual std::string accelerator_name() const { return {}; }
  // The streaming multiprocessors that reduction plans spread their blocks over (kernels/reduction.hpp):
  // the device's count on cuda; cpu and sim plan as for an H100/H200, so that they run one order.
  virtual int multiprocessor_count() const { return kernels::kHostPlanSmCount; }

  // Memory. `name` appears in errors (out of memory, host access).
  virtual Tensor empty(Shape shape, DType dtype, std::string name) = 0;
  // Host memory that asynchronous copies read and write (page-locked on CUDA).
  virtual Tensor pinned(Shape shape, DType dtype, std::string name) = 0;
  // Device bytes currently allocated.
  virtual int64_t memory_in_use() const = 0;
  // empty() zero-filled on the compute stream.
  Tensor zeros(Shape shape, DType dtype, std::string name);

  // Streams and events. Layers run on the compute stream; the input pipeline copies on the copy
  // stream; gradient all-reduces (NCCL, or the host staging of an MPI all-reduce) run on the
  // communication stream.
  virtual Stream& compute_stream() = 0;
  virtual Stream& copy_stream() = 0;
  virtual Stream& comm_stream() = 0;
  virtual std::unique_ptr<Event> make_event(std::string label) = 0;

  // dst = src (same number of bytes; host or device on either side), in order on `stream`.
  virtual void copy_async(Stream& stream, const Tensor& dst, const Tensor& src);
  virtual void fill_zero_async(Stream& stream, const Tensor& dst);
  // A host copy of `t` once the compute stream's work before this call has finished (synchronizes
  // the compute stream): the explicit device-to-host read for tests, checkpoints and tools.
  Tensor download(const Tensor& t);
  // dst = `values` (f32, dst.numel() of them, from the host), queued on the compute stream after its
  // earlier work; returns once the copy is done (checkpoints and tests).
  void upload(const Tensor& dst, const std::vector<float>& values);

  // Whether the heavy operators run `dtype` (f32, bf16, f16) natively or emulated; other types throw.
  virtual PrecisionSupport precision_support(DType dtype) const = 0;
  // Heavy operators, bound to `stream` (null: the compute stream), in the shape's dtype.
  virtual std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* stream = nullptr) = 0;
  virtual std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape,
                                                             Stream* stream = nullptr) = 0;
  virtual std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* stream = nullptr) = 0;
  // A dense layer's products (inner_product_form) run on make_inner_product's op for that direction
  // (backend/inner_product_matmul.hpp); every other shape on make_general_matmul's.
  std::unique_ptr<MatmulOp> make_matmul(const MatmulShape& shape, Stream* stream = nullptr);
  // By default the ConvOp and the activation's kernels composed (compose_activated_conv).
  virtual std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                               Stream* stream = nullptr);
  // By default the depthwise ConvOp and the pointwise make_activated_conv composed
  // (compose_separable_conv).
  virtual std::unique_ptr<SeparableConvOp> make_separable_conv(const SeparableConvShape& shape,
                                                               Stream* stream = nullptr);

  // Batch normalization for `shape`, or null where the backend has none: the layer then runs its own
  // kernels (kernels/batch_norm.hpp), as it always does for SyncBatchNorm. cuda: cuDNN for f32 and f16.
  virtual std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormShape& shape, Stream* stream = nullptr) {
    return nullptr;
  }

  // One line per operator algorithm this backend chose (cuda: the cuDNN algorithm or cuBLASLt heuristic
  // per shape, with its workspace and time); empty where there is no choice to report.
  virtual std::vector<std::string> operator_choices() const { return {}; }

  // Where bf16 GEMM-shaped operators can run two ways, the backend's records and timings of them
  // (backend/bf16_gemm_tuning.hpp); null where there is one way.
  virtual Bf16GemmTuning* bf16_gemm_tuning() { return nullptr; }
  // Where operators choose among algorithms (cuda), how they choose and the book of what they run
  // (backend/algorithm_tuning.hpp); null where there is nothing to choose.
  virtual AlgorithmTuning* algorithm_tuning() { return nullptr; }

  // The device's own record of the kernels it runs (run.profile = kernels), or null with `why_not`
  // saying why there is none: cuda through CUPTI, sim from its streams' work items; cpu has none.
  virtual std::unique_ptr<KernelTrace> make_kernel_trace(std::string& why_not);

  // What the host has asked of this device so far (backend/device_counters.hpp).
  DeviceCounters& counters() { return counters_; }

  // Waits for all work queued on every stream of this backend; one host synchronization.
  void synchronize() {
    counters_.host_sync();
    drain_all();
  }

 protected:
  // What synchronize() waits with: every stream drained, uncounted.
  virtual void drain_all() = 0;
  // The matmuls that are not a dense layer's products (make_matmul lowers those), on `stream`.
  virtual std::unique_ptr<MatmulOp> make_general_matmul(const MatmulShape& shape, Stream* stream) = 0;
  // Counts a copy of dst.bytes() by direction (host and device memory as the tensors' devices say;
  // within one memory it is a call) and returns its kernel-trace label ("memcpy HtoD").
  static const char* count_copy(DeviceCounters& counters, const Tensor& dst, const Tensor& src);

 private:
  DeviceCounters counters_;
  // The inner-product ops make_matmul's lowered products share (backend/inner_product_matmul.hpp).
  std::shared_ptr<SharedInnerProducts> inner_products_;
};

// The CPU backend: oneDNN primitives with as many threads as this process's affinity mask
// allows (or `threads` if > 0).
std::unique_ptr<Backend> make_cpu_backend(int threads = 0, bool onednn_only = false,
                                          Bf16GemmCompute bf16_gemm = Bf16GemmCompute::automatic);
// The simulated device (backend/sim).
std::unique_ptr<Backend> make_sim_backend(const BackendOptions& options);
// A CUDA device (backend/cuda), chosen by options.local_rank among the visible devices; throws in a
// build without SCALETRAIN_ENABLE_CUDA.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);
// The backend options.kind names.
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace scaletrain
