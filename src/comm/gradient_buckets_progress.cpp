// GradientBuckets with a host-driven exchange: progress of the buckets' all-reduces by MPI_Test polls
// from the training loop or by a communication thread, and the host's wait for them in wait_all().
#include <chrono>
#include <thread>

#include "scaletrain/comm/gradient_buckets.hpp"
#include "scaletrain/core/timer.hpp"

namespace scaletrain::comm {
namespace {
// How long the communication thread sleeps between progress tests when nothing completed. Short
// enough to keep transfers moving, long enough not to steal a core from backward
// (scaletrain-bench-allreduce --overlap measures the trade).
constexpr auto kThreadPollInterval = std::chrono::microseconds(50);
}  // namespace

void GradientBuckets::poll() {
  if (threaded_ || !exchange_->host_driven()) return;
  start_ready_buckets(false);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (drive(*it))
      it = in_flight_.erase(it);
    else
      ++it;
  }
}

ExposedWait GradientBuckets::wait_for_host_requests() {
  // Until backward has finished on the device, keep starting buckets as their gradients land; only
  // the wait after that is communication the step exposes.
  if (!ready_.empty()) {
    Event& last = exchanges() ? exchange_->start_after(ready_.size() - 1, *ready_.back()) : *ready_.back();
    last.counters().host_sync();  // the host waits for backward, polling
    while (!last.query()) {
      if (!threaded_) poll();
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
      record(f.bucket, f.start, now_seconds(), step_);
      in_flight_.pop_front();
    }
  }
  return ExposedWait{t0, 0.0};
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
        exchange_->start_after(b, *ready_[b]).synchronize();  // this bucket's gradients are written (and staged)
        const double start = now_seconds();
        mine.push_back(InFlight{b, start, exchange_->start(b, *ready_[b])});
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
