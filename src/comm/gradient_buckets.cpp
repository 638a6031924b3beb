// GradientBuckets: bucket layout over the flat gradient buffer, readiness tracking with events, the
// in-order hand-over of buckets to the exchange, the wire-type rounding and widening (with the
// mean), and statistics. The communication thread and MPI_Test polling are in
// gradient_buckets_progress.cpp.
#include "scaletrain/comm/gradient_buckets.hpp"

#include <algorithm>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/comm/bucket_size_choice.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/scale.hpp"

namespace scaletrain::comm {

CommProgress parse_comm_progress(const std::string& name) {
  if (name == "test") return CommProgress::test;
  if (name == "thread") return CommProgress::thread;
  ST_FAIL("comm.progress = '", name, "' is not one of test, thread");
}

std::string comm_progress_name(CommProgress p) { return p == CommProgress::test ? "test" : "thread"; }

GradientBuckets::GradientBuckets(Communicator& comm, Backend& backend, Tensor flat_grads,
                                 std::vector<GradientSlice> slices, int64_t bucket_bytes, CommProgress progress,
                                 DType wire, bool pre_divided, const BucketExchangeFactory& exchange)
    : comm_(comm),
      backend_(backend),
      grads_(std::move(flat_grads)),
      wire_dtype_(wire),
      pre_divided_(pre_divided),
      slices_(std::move(slices)),
      progress_(progress) {
  ST_CHECK(wire == DType::f32 || wire == DType::bf16 || wire == DType::f16,
           "GradientBuckets: gradients travel as f32, bf16 or f16, not ", dtype_name(wire));
  ST_CHECK(bucket_bytes > 0, "GradientBuckets: bucket_bytes must be positive, got ", bucket_bytes);
  ST_CHECK(slices_.empty() || grads_.defined(), "GradientBuckets: flat gradient buffer is undefined");
  ST_CHECK(!grads_.defined() || grads_.dtype() == DType::f32, "GradientBuckets: gradients '", grads_.name(),
           "' are ", dtype_name(grads_.dtype()), ", expected f32");
  std::vector<int64_t> slice_elements;
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
    ST_CHECK(s.offset + s.count <= grads_.numel(), "GradientBuckets: slice ", i, " ends at element ",
             s.offset + s.count, ", past the ", grads_.numel(), " elements of '", grads_.name(), "'");
    slice_elements.push_back(s.count);
  }
  // The same grouping the bucket-size choice predicts with (comm/bucket_size_choice.hpp).
  size_t next = 0;
  for (size_t n : bucket_slice_counts(slice_elements, bucket_bytes)) {
    Bucket b;
    b.offset = slices_[next].offset;
    b.slices = n;
    for (size_t k = 0; k < n; ++k, ++next) {
      b.count += slices_[next].count;
      slice_bucket_.push_back(buckets_.size());
    }
    buckets_.push_back(b);
  }
  slice_ready_.assign(slices_.size(), 0);
  if (rounds_to_wire() && grads_.defined())
    wire_ = backend_.empty(grads_.shape(), wire_dtype_, "gradients." + std::string(dtype_name(wire_dtype_)));
  for (Bucket& b : buckets_) b.pending = b.slices;
  events_.reserve(buckets_.size());
  // Tests ignore the events labelled "bucket ready" to show that a missing wait is caught.
  for (size_t b = 0; b < buckets_.size(); ++b) ready_.push_back(backend_.make_event("bucket ready " + std::to_string(b)));

  BucketLayout layout{comm_, backend_, reduced(), {}};
  for (const Bucket& b : buckets_) layout.buckets.push_back(BucketSpan{b.offset, b.count});
  exchange_ = exchange(layout);
  ST_CHECK(exchange_ != nullptr, "GradientBuckets: the exchange factory returned no exchange");
  ST_CHECK(!pre_divided || !exchange_->averages(), "GradientBuckets: the ", exchange_->name(),
           " exchange averages (ncclAvg); its gradients must not come pre-divided by the world size");

  threaded_ = progress_ == CommProgress::thread && exchanges() && exchange_->host_driven();
  if (threaded_) {
    ST_CHECK(comm_.allows_other_threads(), "GradientBuckets: progress = 'thread' needs a communicator that may be "
             "called from another thread (MPI initialized with at least MPI_THREAD_SERIALIZED); initialize MPI with "
             "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or use progress = 'test'");
    thread_ = std::thread([this] {
      DeviceCounters::mark_background_thread();
      comm_thread_main();
    });
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

void GradientBuckets::begin_step(int64_t step) {
  ST_CHECK(!in_step_, "GradientBuckets::begin_step: the previous step was not finished with wait_all()");
  read_device_times(false);  // the steps whose all-reduces have completed
  std::fill(slice_ready_.begin(), slice_ready_.end(), 0);
  for (Bucket& b : buckets_) b.pending = b.slices;
  next_to_start_ = 0;
  {
    std::lock_guard<std::mutex> lk(mutex_);
    completed_ = 0;
  }
  step_ = step;
  if (exchanges() && !exchange_->host_driven()) queued_steps_.push_back(step);
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
  if (b.pending == 0) complete_bucket(bi);
}

void GradientBuckets::add_accumulated(const Tensor* sum) {
  ST_CHECK(!sum || (sum->dtype() == DType::f32 && sum->numel() == grads_.numel()), "the accumulated gradients must be f32 [",
           grads_.numel(), "]");
  accumulated_ = sum;
}

void GradientBuckets::complete_bucket(size_t b) {
  // Behind the queued backward work that writes this bucket's gradients (and its rounding).
  if (accumulated_) {
    const Bucket& k = buckets_[b];
    float* g = grads_.device_data<float>() + k.offset;
    scaletrain::launch_elements(backend_.compute_stream(), "accumulate_gradients", k.count,
                                kernels::AddTensors<float>{g, accumulated_->device_data<float>() + k.offset, g});
  }
  if (rounds_to_wire()) round_to_wire(b);
  backend_.compute_stream().record(*ready_[b]);
  if (exchanges()) exchange_->bucket_ready(b, *ready_[b]);
  start_ready_buckets(false);
}

void GradientBuckets::start_ready_buckets(bool block) {
  // Collectives on one communicator must be issued in the same order on every rank, so a bucket
  // completed early waits until every bucket before it has started. A stream-ordered exchange
  // queues behind the ready event itself, and the communication thread waits on it; the polling
  // mode starts a bucket only once the exchange's start event has completed.
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
    const size_t b = next_to_start_;
    if (exchanges() && exchange_->host_driven() && !threaded_) {
      Event& after = exchange_->start_after(b, *ready_[b]);
      if (block)
        after.synchronize();
      else if (!after.query())
        return;
    }
    ++next_to_start_;
    start(b);
  }
}

void GradientBuckets::start(size_t b) {
  if (!exchanges()) return;  // the sum over one rank is the buffer itself, its mean too
  if (!exchange_->host_driven()) {
    (void)exchange_->start(b, *ready_[b]);
    return;
  }
  if (threaded_) {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      queue_.push_back(b);
    }
    work_cv_.notify_one();
    return;
  }
  const double t = now_seconds();
  in_flight_.push_back(InFlight{b, t, exchange_->start(b, *ready_[b])});
}

bool GradientBuckets::drive(InFlight& f) {
  if (!f.request->test()) return false;
  record(f.bucket, f.start, now_seconds(), step_);
  return true;
}

void GradientBuckets::record(size_t b, double start, double end, int64_t step) {
  const int64_t bytes = bucket_bytes(b);
  std::lock_guard<std::mutex> lk(mutex_);
  stats_.allreduce_seconds += end - start;
  stats_.buckets += 1;
  stats_.bytes += bytes;
  events_.push_back(BucketEvent{static_cast<int64_t>(b), bytes, start, end, step});
  ++completed_;
}

void GradientBuckets::read_device_times(bool block) {
  std::vector<BucketTimes> times;
  double backward_done = 0;
  while (exchange_->step_times(block, times, &backward_done)) {
    ST_CHECK(!queued_steps_.empty(), "GradientBuckets: the exchange read back more steps than were started");
    const int64_t step = queued_steps_.front();
    queued_steps_.pop_front();
    if (times.empty()) continue;
    for (size_t b = 0; b < times.size(); ++b) record(b, times[b].start, times[b].end, step);
    // Exposed on the device: how long the last all-reduce ran on after the last bucket was ready.
    std::lock_guard<std::mutex> lk(mutex_);
    stats_.exposed_seconds += std::max(0.0, times.back().end - backward_done);
  }
}

int64_t GradientBuckets::bucket_bytes(size_t b) const {
  return buckets_[b].count * static_cast<int64_t>(dtype_size(rounds_to_wire() ? wire_dtype_ : DType::f32));
}

void GradientBuckets::round_to_wire(size_t b) {
  const Bucket& k = buckets_[b];
  // Through MPI, fp16 is divided by the world size before the sum (its range is 65504; bf16 has
  // f32's); a device communicator's average pre-multiplies by 1/world itself.
  const bool pre_divide = wire_dtype_ == DType::f16 && divides_by_world();
  const float divisor = pre_divide ? static_cast<float>(comm_.size()) : 1.0f;
  visit_float_type(wire_dtype_, [&](auto t) {
    using T = decltype(t);
    scaletrain::launch_elements(
        backend_.compute_stream(), "gradients_to_wire", k.count,
        kernels::Cast<float, T>{grads_.device_data<float>() + k.offset, wire_.device_data<T>() + k.offset, divisor});
  });
}

void GradientBuckets::widen_and_average() {
  // f32 needs nothing on one rank (its sum is its mean), after a device communicator's average, or
  // when the gradients came pre-divided.
  if (buckets_.empty() || (!rounds_to_wire() && (comm_.size() == 1 || !divides_by_world()))) return;
  const int64_t first = buckets_.front().offset;
  const int64_t span = buckets_.back().offset + buckets_.back().count - first;
  const float world = static_cast<float>(comm_.size());
  Stream& s = backend_.compute_stream();
  if (!rounds_to_wire()) {
    // The mean: one division over the bucketed span, in order before the optimizer.
    scaletrain::launch_elements(s, "gradient_mean", span,
                                kernels::DivideBy{grads_.device_data<float>() + first, world});
    return;
  }
  const float divisor = wire_dtype_ == DType::bf16 && divides_by_world() ? world : 1.0f;
  visit_float_type(wire_dtype_, [&](auto t) {
    using T = decltype(t);
    scaletrain::launch_elements(
        s, "gradients_from_wire", span,
        kernels::Cast<T, float>{wire_.device_data<T>() + first, grads_.device_data<float>() + first, divisor});
  });
}

void GradientBuckets::check_all_ready() const {
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
}

ExposedWait GradientBuckets::wait_all() {
  ST_CHECK(in_step_, "GradientBuckets::wait_all outside a step: call begin_step() first");
  check_all_ready();
  const bool host_driven = exchange_->host_driven();
  const ExposedWait w = host_driven ? wait_for_host_requests() : ExposedWait{now_seconds(), 0.0};
  if (exchanges()) exchange_->end_step();
  widen_and_average();
  const double end = now_seconds();
  if (host_driven) {
    std::lock_guard<std::mutex> lk(mutex_);
    stats_.exposed_seconds += end - w.start;
  }
  in_step_ = false;
  return ExposedWait{w.start, end};
}

BucketStats GradientBuckets::stats() {
  read_device_times(false);
  std::lock_guard<std::mutex> lk(mutex_);
  return stats_;
}

void GradientBuckets::read_all_times() { read_device_times(true); }

std::vector<BucketEvent> GradientBuckets::take_events() {
  read_device_times(false);
  std::lock_guard<std::mutex> lk(mutex_);
  std::vector<BucketEvent> taken;
  taken.swap(events_);
  return taken;
}

void GradientBuckets::reset_stats() {
  std::lock_guard<std::mutex> lk(mutex_);
  stats_ = BucketStats{};
}

}  // namespace scaletrain::comm
