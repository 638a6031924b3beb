// GradientBuckets: the flat f32 gradient buffer (on the backend's device) split into contiguous
// buckets of whole parameters (reverse layer order, as backward produces them). When a bucket's
// last parameter is marked ready, an event is recorded on the compute stream behind the backward
// work that writes it; the bucket's all-reduce starts once that event has completed (never
// before), overlapping the rest of backward. wait_all() queues the division by the world size on
// the compute stream, so the optimizer that follows sees the mean.
// A wire type of bf16 or f16 halves the bytes: a completed bucket is rounded into a wire buffer on
// the compute stream (f16 divided by the world size first, so the sum cannot overflow), reduced in
// that type, and widened back into the f32 gradients in wait_all() (bf16 divided by the world size
// there). One rank rounds too (as a DDP compression hook does), so that 1 rank and N ranks train
// the same model; it only skips the all-reduce.
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

// One bucket's all-reduce in the last step (steady-clock seconds, as now_seconds()), for timelines.
struct BucketEvent {
  int64_t bucket;
  int64_t bytes;
  double start;
  double end;
};

// Who drives the all-reduces in flight: a communication thread, or MPI_Test polls from the
// training loop between backward layers (poll()).
enum class CommProgress { test, thread };
CommProgress parse_comm_progress(const std::string& name);  // "test" | "thread"; Error otherwise
std::string comm_progress_name(CommProgress p);

class GradientBuckets {
 public:
  // flat_grads: f32 on the backend's device. The communicator reads and writes it in place (on the
  // CPU and simulated devices the memory is the host's; a CUDA build uses NCCL or CUDA-aware MPI).
  // bucket_bytes counts f32 gradient bytes, whatever the wire type.
  GradientBuckets(Communicator& comm, Backend& backend, Tensor flat_grads,
                  std::vector<GradientSlice> slices_in_ready_order, int64_t bucket_bytes, CommProgress progress,
                  DType wire = DType::f32);
  DType wire_dtype() const { return wire_dtype_; }
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  // Slice range [first, last) of a bucket, and its place in the flat buffer (elements).
  int64_t bucket_offset(int64_t b) const { return buckets_[static_cast<size_t>(b)].offset; }
  int64_t bucket_elements(int64_t b) const { return buckets_[static_cast<size_t>(b)].count; }
  CommProgress progress() const { return progress_; }

  void begin_step();                    // resets readiness; the previous step must have ended with wait_all()
  void mark_ready(size_t slice_index);  // this gradient's backward is queued; completes buckets
  void poll();                          // "test" mode: starts buckets whose gradients are ready, drives those in flight
  // Every slice must be ready. Afterwards the all-reduces are done and the division by the world
  // size is queued on the compute stream. Returns the exposed part of the wait.
  ExposedWait wait_all();

  BucketStats stats() const;
  void reset_stats();
  const std::vector<BucketEvent>& last_step_events() const { return events_; }

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

  void start_ready_buckets(bool block);  // caller thread; starts buckets in index order only
  void launch(size_t b);                // issues the all-reduce of bucket b (or finishes it at once on 1 rank)
  bool drive(InFlight& f);              // tests one in-flight bucket; on completion averages and records
  void finish(size_t b, double start);  // averaging + stats of a completed bucket
  void comm_thread_main();

  // The bucket's all-reduce buffer: its span of the wire buffer (or of the f32 gradients).
  void* bucket_data(size_t b) const;
  int64_t bucket_bytes(size_t b) const;
  bool rounds_to_wire() const { return wire_dtype_ != DType::f32; }
  void round_to_wire(size_t b);  // queues bucket b's f32 -> wire rounding on the compute stream
  void widen_and_average();      // queues wire -> f32 (or the f32 division) for every bucket

  Communicator& comm_;
  Backend& backend_;
  Tensor grads_;
  DType wire_dtype_ = DType::f32;
  Tensor wire_;  // the gradients in the wire type (bf16/f16)
  std::vector<GradientSlice> slices_;
  std::vector<size_t> slice_bucket_;
  std::vector<char> slice_ready_;
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<Event>> ready_;  // per bucket: its gradients are written
  CommProgress progress_;
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
  std::vector<BucketEvent> events_;
};

}  // namespace scaletrain::comm
