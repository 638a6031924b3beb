// GradientBuckets through a device communicator: each completed bucket's all-reduce (the average) is
// queued on the communication stream behind its ready event, between a begin and a done event;
// wait_all() makes the compute stream wait for the last one; the events become the step's timings
// once they have completed. The host never waits here.
#include <algorithm>

#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::comm {

void GradientBuckets::queue_ready_buckets() {
  // In bucket order on every rank (collective ordering), as soon as each bucket is complete.
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
    const size_t b = next_to_start_++;
    if (comm_.size() == 1) continue;  // the mean over one rank is the bucket itself
    Stream& s = backend_.comm_stream();
    s.wait(*ready_[b]);
    s.record(*begin_[b]);  // the all-reduce starts here: its gradients are ready, the previous one done
    comm_.queue_allreduce(bucket_data(b), buckets_[b].count, wire_dtype_, ReduceOp::avg, *ready_[b], *done_[b]);
    unharvested_ = true;
  }
}

ExposedWait GradientBuckets::wait_on_stream() {
  const double t0 = now_seconds();
  comm_.check_async_error();
  // The communication stream runs in order: its last all-reduce done means all of them are.
  if (comm_.size() > 1 && !done_.empty()) backend_.compute_stream().wait(*done_.back());
  widen_and_average();
  return ExposedWait{t0, now_seconds()};
}

void GradientBuckets::harvest_stream_events(bool block) {
  if (!unharvested_) return;
  Event& last = *done_.back();
  if (block)
    last.synchronize();
  else if (!last.query())
    return;
  std::lock_guard<std::mutex> lk(mutex_);
  events_.clear();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const double start = begin_[b]->completion_time(), end = done_[b]->completion_time();
    const int64_t bytes = bucket_bytes(b);
    stats_.allreduce_seconds += end - start;
    stats_.buckets += 1;
    stats_.bytes += bytes;
    events_.push_back(BucketEvent{static_cast<int64_t>(b), bytes, start, end});
  }
  // Exposed on the device: how long the last all-reduce ran on after the last bucket was ready.
  Event& backward_done = *ready_.back();
  if (backward_done.query())
    stats_.exposed_seconds += std::max(0.0, last.completion_time() - backward_done.completion_time());
  unharvested_ = false;
}

}  // namespace scaletrain::comm
