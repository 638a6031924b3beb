// GradientBuckets: the flat f32 gradient buffer split into contiguous buckets of whole parameters
// (reverse layer order, as backward produces them); a bucket's all-reduce starts the moment its
// last parameter is marked ready, overlapping the rest of backward; wait_all() leaves the mean.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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
  double exposed_seconds = 0;    // time wait_all() blocked
  int64_t buckets = 0;           // bucket all-reduces completed
  int64_t bytes = 0;             // bytes all-reduced
};

// One bucket's all-reduce in the last step (steady-clock seconds, as now_seconds()), for timelines.
struct BucketEvent {
  int64_t bucket;
  int64_t bytes;
  double start;
  double end;
};

class GradientBuckets {
 public:
  // flat_grads must outlive this object. progress: "thread" (a communication thread issues and
  // drives the all-reduces) or "test" (MPI_Test from poll(), called by the training loop).
  GradientBuckets(Communicator& comm, float* flat_grads, std::vector<GradientSlice> slices_in_ready_order,
                  int64_t bucket_bytes = 25 * 1024 * 1024, std::string progress = "thread");
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  // Slice range [first, last) of a bucket, and its place in the flat buffer (elements).
  int64_t bucket_offset(int64_t b) const { return buckets_[static_cast<size_t>(b)].offset; }
  int64_t bucket_elements(int64_t b) const { return buckets_[static_cast<size_t>(b)].count; }
  const std::string& progress() const { return progress_; }

  void begin_step();                    // resets readiness; the previous step must have ended with wait_all()
  void mark_ready(size_t slice_index);  // this gradient is final; starts every bucket that is now complete
  void poll();                          // "test" mode: drives progress of buckets in flight; no-op in "thread"
  void wait_all();                      // every slice must be ready; afterwards flat_grads holds the global mean

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

  void start_ready_buckets();           // caller thread; starts buckets in index order only
  void launch(size_t b);                // issues the all-reduce of bucket b (or finishes it at once on 1 rank)
  bool drive(InFlight& f);              // tests one in-flight bucket; on completion averages and records
  void finish(size_t b, double start);  // averaging + stats of a completed bucket
  void comm_thread_main();

  Communicator& comm_;
  float* grads_;
  std::vector<GradientSlice> slices_;
  std::vector<size_t> slice_bucket_;
  std::vector<char> slice_ready_;
  std::vector<Bucket> buckets_;
  std::string progress_;
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
