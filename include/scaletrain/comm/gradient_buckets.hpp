// GradientBuckets: the flat f32 gradient buffer (on the backend's device) split into contiguous
// buckets of whole parameters (reverse layer order, as backward produces them). When a bucket's
// last parameter is marked ready, an event is recorded on the compute stream behind the backward
// work that writes it; the bucket's all-reduce starts behind that event (never before), overlapping
// the rest of backward. How it travels (BucketTransport) follows from the communicator and the
// backend: MPI on host memory, MPI through pinned host copies of device memory, or a device
// communicator queued on the communication stream. After wait_all() the optimizer that follows on
// the compute stream sees the mean.
// A wire type of bf16 or f16 halves the bytes: a completed bucket is rounded into a wire buffer on
// the compute stream, reduced in that type, and widened back into the f32 gradients in wait_all().
// Through MPI, f16 is divided by the world size before the sum (so the sum cannot overflow) and bf16
// when widened; a device communicator averages itself (ncclAvg pre-multiplies by 1/world). One rank
// rounds too (as a DDP compression hook does), so that 1 rank and N ranks train the same model; it
// only skips the all-reduce.
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

// How the buckets reach the communicator:
//   host:           the gradients are host memory (cpu backend): MPI reads them in place once the
//                   bucket's ready event has completed, driven by MPI_Test polls or a thread.
//   host_staged:    a host communicator (MPI) with device memory the host cannot read (sim, cuda):
//                   each completed bucket is copied to a pinned host mirror on the communication
//                   stream behind its ready event; MPI reduces the mirror once that copy's event has
//                   completed; wait_all() copies the reduced span back on the compute stream.
//   stream_ordered: a device communicator (NCCL, or its simulation on sim): each completed bucket's
//                   all-reduce (ReduceOp::avg) is queued at once on the communication stream behind
//                   its ready event, and wait_all() makes the compute stream wait for the last one.
//                   No host wait, no thread, no MPI_Test.
enum class BucketTransport { host, host_staged, stream_ordered };
BucketTransport bucket_transport(const Communicator& comm, const Backend& backend);
std::string bucket_transport_name(BucketTransport t);  // "host", "host-staged", "stream-ordered"

// Who drives the all-reduces in flight: a communication thread, or MPI_Test polls from the
// training loop between backward layers (poll()).
enum class CommProgress { test, thread };
CommProgress parse_comm_progress(const std::string& name);  // "test" | "thread"; Error otherwise
std::string comm_progress_name(CommProgress p);

class GradientBuckets {
 public:
  // flat_grads: f32 on the backend's device. comm: the host communicator (MPI) or a device
  // communicator (queues_on_stream()); the transport follows (bucket_transport). bucket_bytes counts
  // f32 gradient bytes, whatever the wire type. progress applies to the host transports.
  // pre_divided (host transports only): each rank's gradients are already divided by the world
  // size (the trainer scales the loss's gradient by 1 / global batch), so their sum is the mean and
  // nothing divides after the all-reduce (nor before it, for f16's range).
  GradientBuckets(Communicator& comm, Backend& backend, Tensor flat_grads,
                  std::vector<GradientSlice> slices_in_ready_order, int64_t bucket_bytes, CommProgress progress,
                  DType wire = DType::f32, bool pre_divided = false);
  bool pre_divided() const { return pre_divided_; }
  DType wire_dtype() const { return wire_dtype_; }
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  // Slice range [first, last) of a bucket, and its place in the flat buffer (elements).
  int64_t bucket_offset(int64_t b) const { return buckets_[static_cast<size_t>(b)].offset; }
  int64_t bucket_elements(int64_t b) const { return buckets_[static_cast<size_t>(b)].count; }
  CommProgress progress() const { return progress_; }
  BucketTransport transport() const { return transport_; }

  void begin_step();                    // resets readiness; the previous step must have ended with wait_all()
  void mark_ready(size_t slice_index);  // this gradient's backward is queued; completes buckets
  void poll();                          // "test" mode: starts buckets whose gradients are ready, drives those in flight
  // Every slice must be ready. Host transports: returns once the all-reduces are done, with the
  // copy back (host_staged) and the averaging queued on the compute stream; the exposed part of the
  // wait is returned. stream_ordered: queues the compute stream's wait for the all-reduces (and the
  // widening) and returns at once; the exposed time is the device's (see stats()).
  ExposedWait wait_all();

  // stream_ordered: the all-reduces are timed by events on the communication stream, read once
  // they have completed (here, when the step's all-reduces have; at the latest at begin_step()).
  BucketStats stats();
  void reset_stats();
  const std::vector<BucketEvent>& last_step_events();

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

  bool stream_ordered() const { return transport_ == BucketTransport::stream_ordered; }
  // Whether this object divides by the world size: a host transport, gradients not pre-divided (a
  // device communicator averages itself).
  bool divides_by_world() const { return !stream_ordered() && !pre_divided_; }
  void check_all_ready() const;
  void complete_bucket(size_t b);  // its last slice is ready: round, record, stage or queue

  // Host transports (gradient_buckets_host.cpp).
  void start_ready_buckets(bool block);  // caller thread; starts buckets in index order only
  void launch(size_t b);                // issues the all-reduce of bucket b (or finishes it at once on 1 rank)
  bool drive(InFlight& f);              // tests one in-flight bucket; on completion records it
  void finish(size_t b, double start);  // stats of a completed bucket
  void comm_thread_main();
  Event& start_event(size_t b);         // what the all-reduce waits for: ready, or staged (host_staged)
  void stage_to_host(size_t b);         // host_staged: device -> mirror on the communication stream
  void copy_back_from_host();           // host_staged: mirror -> device on the compute stream
  ExposedWait wait_on_host();

  // stream_ordered (gradient_buckets_stream.cpp).
  void queue_ready_buckets();           // queues every completed bucket, in index order
  ExposedWait wait_on_stream();
  void harvest_stream_events(bool block);  // the step's per-bucket times, once its all-reduces are done

  // The bucket's all-reduce buffer: its span of the wire buffer (or of the f32 gradients), or of
  // their host mirror (host_staged).
  const Tensor& reduced() const { return rounds_to_wire() ? wire_ : grads_; }
  void* bucket_data(size_t b) const;
  int64_t bucket_bytes(size_t b) const;
  bool rounds_to_wire() const { return wire_dtype_ != DType::f32; }
  void round_to_wire(size_t b);  // queues bucket b's f32 -> wire rounding on the compute stream
  void widen_and_average();      // queues wire -> f32 (or the f32 division) for every bucket

  Communicator& comm_;
  Backend& backend_;
  Tensor grads_;
  DType wire_dtype_ = DType::f32;
  bool pre_divided_ = false;
  Tensor wire_;  // the gradients in the wire type (bf16/f16)
  std::vector<GradientSlice> slices_;
  std::vector<size_t> slice_bucket_;
  std::vector<char> slice_ready_;
  std::vector<Bucket> buckets_;
  std::vector<std::unique_ptr<Event>> ready_;  // per bucket: its gradients are written
  CommProgress progress_;
  BucketTransport transport_;

  // host_staged: the pinned host copy of the reduced buffer; per bucket, its copy there is done.
  Tensor mirror_;
  std::vector<std::unique_ptr<Event>> staged_;

  // stream_ordered: per bucket, its all-reduce began / is done on the communication stream; whether
  // a step's all-reduces are queued and not yet read.
  std::vector<std::unique_ptr<Event>> begin_, done_;
  bool unharvested_ = false;
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
