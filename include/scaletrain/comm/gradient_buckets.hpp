// GradientBuckets: the flat f32 gradient buffer (on the backend's device) split into contiguous
// buckets of whole parameters (reverse layer order, as backward produces them), and the bookkeeping
// of their all-reduces. When a bucket's last parameter is marked ready, an event is recorded on the
// compute stream behind the backward work that writes it, and the bucket is handed to a
// BucketExchange (comm/bucket_exchange.hpp), in index order, which starts its all-reduce behind that
// event (never before), overlapping the rest of backward. Host-driven exchanges are progressed by
// MPI_Test polls or a communication thread. After wait_all() the optimizer that follows on the
// compute stream sees the mean.
// A wire type of bf16 or f16 halves the bytes: a completed bucket is rounded into a wire buffer on
// the compute stream, reduced in that type, and widened back into the f32 gradients in wait_all().
// Through MPI, f16 is divided by the world size before the sum (so the sum cannot overflow) and bf16
// when widened; a device communicator averages itself (ncclAvg pre-multiplies by 1/world). One rank
// rounds too (as a DDP compression hook does), so that 1 rank and N ranks train the same model; it
// only skips the all-reduce.
// Gradient accumulation (train.accumulate_steps): the earlier micro-batches' sum is added into each
// bucket's gradients as the bucket completes in the last micro-batch, before its rounding and
// exchange, so one all-reduce per bucket per update overlaps the last backward.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/bucket_exchange.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// One parameter's gradient inside the flat buffer (elements), listed in ready order.
struct GradientSlice {
  int64_t offset;
  int64_t count;
};

// Accumulated since construction or reset_stats().
struct BucketStats {
  double allreduce_seconds = 0;  // sum over buckets of time from start to observed completion
  double exposed_seconds = 0;    // time wait_all() blocked after backward had finished on the device
  int64_t buckets = 0;           // bucket all-reduces completed
  int64_t bytes = 0;             // bytes all-reduced
};

// The part of wait_all() that waited for communication, after backward had finished on the device
// (steady-clock seconds).
struct ExposedWait {
  double start, end;
};

// One bucket's all-reduce (steady-clock seconds, as now_seconds()) in a step, for timelines.
struct BucketEvent {
  int64_t bucket;
  int64_t bytes;
  double start;
  double end;
  int64_t step;  // as begin_step() was told
};

// Who drives the all-reduces in flight: a communication thread, or MPI_Test polls from the
// training loop between backward layers (poll()).
enum class CommProgress { test, thread };
CommProgress parse_comm_progress(const std::string& name);  // "test" | "thread"; Error otherwise
std::string comm_progress_name(CommProgress p);

class GradientBuckets {
 public:
  // flat_grads: f32 on the backend's device. comm: the host communicator (MPI) or a device
  // communicator (queues_on_stream()). bucket_bytes counts f32 gradient bytes, whatever the wire
  // type. progress applies to host-driven exchanges. pre_divided (summing exchanges only): each
  // rank's gradients are already divided by the world size (the trainer scales the loss's gradient
  // by 1 / global batch), so their sum is the mean and nothing divides after the all-reduce (nor
  // before it, for f16's range). exchange: how the buckets travel; by default the built-in exchange
  // for comm and backend (make_bucket_exchange).
  GradientBuckets(Communicator& comm, Backend& backend, Tensor flat_grads,
                  std::vector<GradientSlice> slices_in_ready_order, int64_t bucket_bytes, CommProgress progress,
                  DType wire = DType::f32, bool pre_divided = false,
                  const BucketExchangeFactory& exchange = make_bucket_exchange);
  bool pre_divided() const { return pre_divided_; }
  DType wire_dtype() const { return wire_dtype_; }
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  // A bucket's place in the flat buffer (elements).
  int64_t bucket_offset(int64_t b) const { return buckets_[static_cast<size_t>(b)].offset; }
  int64_t bucket_elements(int64_t b) const { return buckets_[static_cast<size_t>(b)].count; }
  CommProgress progress() const { return progress_; }
  const BucketExchange& exchange() const { return *exchange_; }

  // The sum of the update's earlier micro-batches' gradients (f32, the gradients' length) to add into
  // each bucket as it completes; null (the default): none.
  void add_accumulated(const Tensor* sum);
  // Resets readiness; the previous step must have ended with wait_all(). `step` tags its events.
  void begin_step(int64_t step);
  void mark_ready(size_t slice_index);  // this gradient's backward is queued; completes buckets
  void poll();                          // "test" mode: starts buckets whose gradients are ready, drives those in flight
  // Every slice must be ready. Host-driven exchanges: returns once the all-reduces are done, with
  // the exchange's end of step and the averaging queued on the compute stream; the exposed part of
  // the wait is returned. Stream-ordered: queues the compute stream's wait for the all-reduces (and
  // the widening) and returns at once; the exposed time is the device's (see stats()).
  ExposedWait wait_all();

  // Stream-ordered: the all-reduces are timed by events on the communication stream, read once
  // they have completed, never waiting (a later step, or here); read_all_times() waits for them.
  BucketStats stats();
  void reset_stats();
  void read_all_times();
  // The all-reduces read since the last call, of any steps, in order (each step's once).
  std::vector<BucketEvent> take_events();

 private:
  struct Bucket {
    int64_t offset = 0;  // elements
    int64_t count = 0;   // elements
    size_t slices = 0;   // number of slices in it
    size_t pending = 0;  // slices not yet ready this step
  };
  struct InFlight {
    size_t bucket;
    double start;
    std::unique_ptr<Request> request;
  };

  // Whether the exchange is called at all: one rank's sum is its own buffer.
  bool exchanges() const { return comm_.size() > 1; }
  // Whether this object divides by the world size: a summing exchange, gradients not pre-divided.
  bool divides_by_world() const { return !exchange_->averages() && !pre_divided_; }
  void check_all_ready() const;
  void complete_bucket(size_t b);  // its last slice is ready: round, record, hand to the exchange

  void start_ready_buckets(bool block);  // caller thread; starts buckets in index order only
  void start(size_t b);                  // hands bucket b to the exchange (or to the communication thread)
  bool drive(InFlight& f);               // tests one in-flight bucket; on completion records it
  void record(size_t b, double start, double end, int64_t step);  // a completed bucket's statistics and event
  void read_device_times(bool block);    // stream-ordered: the steps' per-bucket times, once done
  ExposedWait wait_for_host_requests();  // host-driven: until every bucket's all-reduce is done

  // Host progress (gradient_buckets_progress.cpp).
  void comm_thread_main();

  int64_t bucket_bytes(size_t b) const;
  bool rounds_to_wire() const { return wire_dtype_ != DType::f32; }
  // The buffer all-reduced: the wire copy, or the f32 gradients.
  const Tensor& reduced() const { return rounds_to_wire() ? wire_ : grads_; }
  void round_to_wire(size_t b);  // queues bucket b's f32 -> wire rounding on the compute stream
  void widen_and_average();      // queues wire -> f32 (or the f32 division) for every bucket

  Communicator& comm_;
  Backend& backend_;
  Tensor grads_;
  DType wire_dtype_ = DType::f32;
  bool pre_divided_ = false;
  Tensor wire_;  // the gradients in the wire type (bf16/f16)
  const Tensor* accumulated_ = nullptr;  // add_accumulated's
  std::vector<GradientSlice> slices_;
  std::vector<size_t> slice_bucket_;
  std::vector<char> slice_ready_;
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<Event>> ready_;  // per bucket: its gradients are written
  CommProgress progress_;
  // After ready_: destroyed first, so that stream work it queued on those events has finished.
  std::unique_ptr<BucketExchange> exchange_;

  bool threaded_ = false;
  bool in_step_ = false;
  size_t next_to_start_ = 0;  // buckets start in index order on every rank (collective ordering)

  // "test" mode: buckets in flight, owned by the caller thread.
  std::deque<InFlight> in_flight_;

  // "thread" mode: queue of buckets to start, handed to the communication thread.
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::deque<size_t> queue_;
  size_t completed_ = 0;
  bool stop_ = false;
  std::exception_ptr thread_error_;

  BucketStats stats_;  // guarded by mutex_ in thread mode
  std::vector<BucketEvent> events_;     // read, not taken yet
  int64_t step_ = 0;                    // begin_step()'s
  std::deque<int64_t> queued_steps_;    // stream-ordered: the steps whose times are not read yet
};

}  // namespace scaletrain::comm
