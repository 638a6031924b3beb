// GradientBuckets: bucket layout over the flat gradient buffer, readiness tracking with events,
// in-order launch of bucket all-reduces, and their progress by a communication thread or by
// MPI_Test polls; the mean is a division queued on the compute stream.
#include "scaletrain/comm/gradient_buckets.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/scale.hpp"

namespace scaletrain::comm {
namespace {
// How long the communication thread sleeps between progress tests when nothing completed. Short
// enough to keep transfers moving, long enough not to steal a core from backward (see report in
// scaletrain-bench-allreduce --overlap).
constexpr auto kThreadPollInterval = std::chrono::microseconds(50);
}  // namespace

CommProgress parse_comm_progress(const std::string& name) {
  if (name == "test") return CommProgress::test;
  if (name == "thread") return CommProgress::thread;
  ST_FAIL("comm.progress = '", name, "' is not one of test, thread");
}

std::string comm_progress_name(CommProgress p) { return p == CommProgress::test ? "test" : "thread"; }

GradientBuckets::GradientBuckets(Communicator& comm, Backend& backend, Tensor flat_grads,
                                 std::vector<GradientSlice> slices, int64_t bucket_bytes, CommProgress progress,
                                 DType wire)
    : comm_(comm),
      backend_(backend),
      grads_(std::move(flat_grads)),
      wire_dtype_(wire),
      slices_(std::move(slices)),
      progress_(progress) {
  ST_CHECK(wire == DType::f32 || wire == DType::bf16 || wire == DType::f16,
           "GradientBuckets: gradients travel as f32, bf16 or f16, not ", dtype_name(wire));
  ST_CHECK(bucket_bytes > 0, "GradientBuckets: bucket_bytes must be positive, got ", bucket_bytes);
  ST_CHECK(slices_.empty() || grads_.defined(), "GradientBuckets: flat gradient buffer is undefined");
  ST_CHECK(!grads_.defined() || grads_.dtype() == DType::f32, "GradientBuckets: gradients '", grads_.name(),
           "' are ", dtype_name(grads_.dtype()), ", expected f32");
  const int64_t elem = static_cast<int64_t>(sizeof(float));
  for (size_t i = 0; i < slices_.size(); ++i) {
    const GradientSlice& s = slices_[i];
    ST_CHECK(s.count > 0 && s.offset >= 0, "GradientBuckets: slice ", i, " has offset ", s.offset, " and count ",
             s.count, " (count must be positive, offset non-negative)");
    if (i > 0) {
      const GradientSlice& p = slices_[i - 1];
      ST_CHECK(s.offset == p.offset + p.count, "GradientBuckets: slice ", i, " starts at element ", s.offset,
               " but slice ", i - 1, " ends at ", p.offset + p.count,
               "; slices in ready order must be contiguous and increasing in the flat buffer");
    }
    if (buckets_.empty() || (buckets_.back().count + s.count) * elem > bucket_bytes) {
      Bucket b;
      b.offset = s.offset;
      buckets_.push_back(b);
    }
    ST_CHECK(s.offset + s.count <= grads_.numel(), "GradientBuckets: slice ", i, " ends at element ",
             s.offset + s.count, ", past the ", grads_.numel(), " elements of '", grads_.name(), "'");
    Bucket& b = buckets_.back();
    b.count += s.count;
    ++b.slices;
    slice_bucket_.push_back(buckets_.size() - 1);
  }
  slice_ready_.assign(slices_.size(), 0);
  if (rounds_to_wire() && grads_.defined())
    wire_ = backend_.empty(grads_.shape(), wire_dtype_, "gradients." + std::string(dtype_name(wire_dtype_)));
  for (Bucket& b : buckets_) b.pending = b.slices;
  events_.reserve(buckets_.size());
  for (size_t b = 0; b < buckets_.size(); ++b) ready_.push_back(backend_.make_event("bucket ready " + std::to_string(b)));

  threaded_ = progress_ == CommProgress::thread && comm_.size() > 1;
  if (threaded_) {
    ST_CHECK(comm_.allows_other_threads(), "GradientBuckets: progress = 'thread' needs a communicator that may be "
             "called from another thread (MPI initialized with at least MPI_THREAD_SERIALIZED); initialize MPI with "
             "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or use progress = 'test'");
    thread_ = std::thread([this] { comm_thread_main(); });
  }
}

GradientBuckets::~GradientBuckets() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      stop_ = true;
    }
    work_cv_.notify_all();
    thread_.join();
  }
}

void GradientBuckets::begin_step() {
  ST_CHECK(!in_step_, "GradientBuckets::begin_step: the previous step was not finished with wait_all()");
  std::fill(slice_ready_.begin(), slice_ready_.end(), 0);
  for (Bucket& b : buckets_) b.pending = b.slices;
  next_to_start_ = 0;
  {
    std::lock_guard<std::mutex> lk(mutex_);
    completed_ = 0;
    events_.clear();
  }
  in_step_ = true;
}

void GradientBuckets::mark_ready(size_t slice_index) {
  ST_CHECK(in_step_, "GradientBuckets::mark_ready(", slice_index, ") outside a step: call begin_step() first");
  ST_CHECK(slice_index < slices_.size(), "GradientBuckets::mark_ready: slice ", slice_index, " out of range (",
           slices_.size(), " slices)");
  ST_CHECK(!slice_ready_[slice_index], "GradientBuckets::mark_ready: slice ", slice_index,
           " was already marked ready in this step");
  slice_ready_[slice_index] = 1;
  const size_t bi = slice_bucket_[slice_index];
  Bucket& b = buckets_[bi];
  --b.pending;
  if (b.pending == 0) {
    // Behind the queued backward work that writes this bucket's gradients (and its rounding).
    if (rounds_to_wire()) round_to_wire(bi);
    backend_.compute_stream().record(*ready_[bi]);
    start_ready_buckets(false);
  }
}

void GradientBuckets::start_ready_buckets(bool block) {
  // Collectives on one communicator must be issued in the same order on every rank, so a bucket
  // completed early waits until every bucket before it has started. The communication thread waits
  // on the ready event itself; the polling mode starts a bucket only once its event has completed.
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
    Event& ready = *ready_[next_to_start_];
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

void* GradientBuckets::bucket_data(size_t b) const {
  const Tensor& t = rounds_to_wire() ? wire_ : grads_;
  return static_cast<char*>(t.device_raw()) + buckets_[b].offset * static_cast<int64_t>(dtype_size(t.dtype()));
}

int64_t GradientBuckets::bucket_bytes(size_t b) const {
  return buckets_[b].count * static_cast<int64_t>(dtype_size(rounds_to_wire() ? wire_dtype_ : DType::f32));
}

void GradientBuckets::round_to_wire(size_t b) {
  const Bucket& k = buckets_[b];
  // fp16 is divided by the world size before the sum (its range is 65504); bf16 has f32's range.
  const float divisor = wire_dtype_ == DType::f16 ? static_cast<float>(comm_.size()) : 1.0f;
  visit_float_type(wire_dtype_, [&](auto t) {
    using T = decltype(t);
    scaletrain::launch(backend_.compute_stream(), "gradients_to_wire", k.count,
                       kernels::Cast<float, T>{grads_.device_data<float>() + k.offset,
                                               wire_.device_data<T>() + k.offset, divisor});
  });
}

void GradientBuckets::widen_and_average() {
  if (buckets_.empty() || (comm_.size() == 1 && !rounds_to_wire())) return;
  const int64_t first = buckets_.front().offset;
  const int64_t span = buckets_.back().offset + buckets_.back().count - first;
  const float world = static_cast<float>(comm_.size());
  Stream& s = backend_.compute_stream();
  if (!rounds_to_wire()) {
    // The mean: one division over the bucketed span, in order before the optimizer.
    scaletrain::launch(s, "gradient_mean", span, kernels::DivideBy{grads_.device_data<float>() + first, world});
    return;
  }
  const float divisor = wire_dtype_ == DType::f16 ? 1.0f : world;
  visit_float_type(wire_dtype_, [&](auto t) {
    using T = decltype(t);
    scaletrain::launch(s, "gradients_from_wire", span,
                       kernels::Cast<T, float>{wire_.device_data<T>() + first, grads_.device_data<float>() + first,
                                               divisor});
  });
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
  if (threaded_) return;
  start_ready_buckets(false);
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (drive(*it))
      it = in_flight_.erase(it);
    else
      ++it;
  }
}

ExposedWait GradientBuckets::wait_all() {
  ST_CHECK(in_step_, "GradientBuckets::wait_all outside a step: call begin_step() first");
  size_t missing = 0, first = slices_.size();
  for (size_t i = 0; i < slices_.size(); ++i)
    if (!slice_ready_[i]) {
      ++missing;
      first = std::min(first, i);
    }
  if (missing > 0) {
    ST_FAIL("GradientBuckets::wait_all: ", missing, " of ", slices_.size(),
            " gradients were never marked ready in this step (first: slice ", first, ")");
  }
  // Until backward has finished on the device, keep starting buckets as their gradients land; only
  // the wait after that is communication the step exposes.
  if (!ready_.empty()) {
    Event& last = *ready_.back();
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
  widen_and_average();
  const double t1 = now_seconds();
  {
    std::lock_guard<std::mutex> lk(mutex_);
    stats_.exposed_seconds += t1 - t0;
  }
  in_step_ = false;
  return ExposedWait{t0, t1};
}

BucketStats GradientBuckets::stats() const {
  std::lock_guard<std::mutex> lk(mutex_);
  return stats_;
}

void GradientBuckets::reset_stats() {
  std::lock_guard<std::mutex> lk(mutex_);
  stats_ = BucketStats{};
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
        ready_[b]->synchronize();  // backward has written this bucket's gradients
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
