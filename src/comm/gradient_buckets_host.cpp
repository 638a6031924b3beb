// GradientBuckets through a host communicator (MPI): in-order launch of the buckets' all-reduces once
// their gradients are on the host (in place, or staged to the pinned mirror on the communication
// stream), progress by MPI_Test polls or a communication thread, and the blocking wait_all().
#include <chrono>
#include <thread>

#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::comm {
namespace {
// How long the communication thread sleeps between progress tests when nothing completed. Short
// enough to keep transfers moving, long enough not to steal a core from backward (see report in
// scaletrain-bench-allreduce --overlap).
constexpr auto kThreadPollInterval = std::chrono::microseconds(50);
}  // namespace

Event& GradientBuckets::start_event(size_t b) {
  return transport_ == BucketTransport::host_staged ? *staged_[b] : *ready_[b];
}

void GradientBuckets::stage_to_host(size_t b) {
  // The copy waits for the gradients-ready event on the communication stream, so the compute
  // stream runs on; MPI waits for the staged event.
  Stream& s = backend_.comm_stream();
  const Bucket& k = buckets_[b];
  s.wait(*ready_[b]);
  backend_.copy_async(s, mirror_.view(k.offset, {k.count}), reduced().view(k.offset, {k.count}));
  s.record(*staged_[b]);
}

void GradientBuckets::copy_back_from_host() {
  if (transport_ != BucketTransport::host_staged || comm_.size() == 1 || buckets_.empty()) return;
  const int64_t first = buckets_.front().offset;
  const int64_t span = buckets_.back().offset + buckets_.back().count - first;
  backend_.copy_async(backend_.compute_stream(), reduced().view(first, {span}), mirror_.view(first, {span}));
}

void GradientBuckets::start_ready_buckets(bool block) {
  // Collectives on one communicator must be issued in the same order on every rank, so a bucket
  // completed early waits until every bucket before it has started. The communication thread waits
  // on the start event itself; the polling mode starts a bucket only once its event has completed.
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
    Event& ready = start_event(next_to_start_);
    if (!threaded_ && comm_.size() > 1) {
      if (block)
        ready.synchronize();
      else if (!ready.query())
        return;
    }
    launch(next_to_start_++);
  }
}

void GradientBuckets::launch(size_t b) {
  if (comm_.size() == 1) return;  // the sum over one rank is the buffer itself, its mean too
  if (threaded_) {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      queue_.push_back(b);
    }
    work_cv_.notify_one();
    return;
  }
  const double start = now_seconds();
  in_flight_.push_back(
      InFlight{b, start, comm_.allreduce_async(bucket_data(b), buckets_[b].count, wire_dtype_, ReduceOp::sum)});
}

bool GradientBuckets::drive(InFlight& f) {
  if (!f.request->test()) return false;
  finish(f.bucket, f.start);
  return true;
}

void GradientBuckets::finish(size_t b, double start) {
  const int64_t bytes = bucket_bytes(b);
  const double end = now_seconds();
  std::lock_guard<std::mutex> lk(mutex_);
  stats_.allreduce_seconds += end - start;
  stats_.buckets += 1;
  stats_.bytes += bytes;
  events_.push_back(BucketEvent{static_cast<int64_t>(b), bytes, start, end});
  ++completed_;
}

void GradientBuckets::poll() {
  if (threaded_ || stream_ordered()) return;
  start_ready_buckets(false);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (drive(*it))
      it = in_flight_.erase(it);
    else
      ++it;
  }
}

ExposedWait GradientBuckets::wait_on_host() {
  // Until backward has finished on the device, keep starting buckets as their gradients land; only
  // the wait after that is communication the step exposes.
  if (!ready_.empty()) {
    Event& last = start_event(ready_.size() - 1);
    while (!last.query()) {
      if (!threaded_) {
        start_ready_buckets(false);
        poll();
      }
      std::this_thread::yield();
    }
  }
  const double t0 = now_seconds();
  start_ready_buckets(true);
  if (threaded_) {
    std::unique_lock<std::mutex> lk(mutex_);
    done_cv_.wait(lk, [&] { return completed_ == buckets_.size() || thread_error_; });
    if (thread_error_) std::rethrow_exception(thread_error_);
  } else {
    while (!in_flight_.empty()) {
      InFlight& f = in_flight_.front();
      f.request->wait();
      finish(f.bucket, f.start);
      in_flight_.pop_front();
    }
  }
  copy_back_from_host();
  widen_and_average();
  const double t1 = now_seconds();
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stats_.exposed_seconds += t1 - t0;
  }
  return ExposedWait{t0, t1};
}

void GradientBuckets::comm_thread_main() {
  // The only thread that calls the communicator between begin_step() and wait_all(); outside a step
  // it sleeps on work_cv_, so the caller's own collectives never run concurrently with it.
  std::deque<InFlight> mine;
  std::vector<size_t> todo;
  for (;;) {
    {
      std::unique_lock<std::mutex> lk(mutex_);
      if (mine.empty()) work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (stop_ && queue_.empty() && mine.empty()) return;
      todo.assign(queue_.begin(), queue_.end());
      queue_.clear();
    }
    try {
      for (size_t b : todo) {
        start_event(b).synchronize();  // this bucket's gradients are written (and staged)
        const double start = now_seconds();
        mine.push_back(
            InFlight{b, start, comm_.allreduce_async(bucket_data(b), buckets_[b].count, wire_dtype_, ReduceOp::sum)});
      }
      bool any = false;
      for (auto it = mine.begin(); it != mine.end();) {
        if (drive(*it)) {
          it = mine.erase(it);
          any = true;
        } else {
          ++it;
        }
      }
      if (any) done_cv_.notify_all();
      if (!mine.empty() && !any) std::this_thread::sleep_for(kThreadPollInterval);
    } catch (...) {
      // MPI failed: hand the error to wait_all(); abandon the requests rather than wait on them.
      for (InFlight& f : mine) (void)f.request.release();
      std::lock_guard<std::mutex> lk(mutex_);
      thread_error_ = std::current_exception();
      done_cv_.notify_all();
      return;
    }
  }
}

}  // namespace scaletrain::comm
