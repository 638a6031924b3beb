// SimStream / SimEvent: a worker thread per stream running its queue in order, events with
// record/complete generations, sticky errors rethrown on the host, injected random delays.
#include "scaletrain/backend/sim/sim_stream.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>

#include "scaletrain/core/error.hpp"
#include "scaletrain/core/timer.hpp"
#include "scaletrain/kernels/random.hpp"

namespace scaletrain::sim {

bool SimEvent::query() {
  std::lock_guard lk(mu_);
  return ignored_ || completed_ >= recorded_;
}

void SimEvent::block() {
  std::unique_lock lk(mu_);
  if (ignored_) return;
  const uint64_t target = recorded_;
  cv_.wait(lk, [&] { return completed_ >= target; });
}

double SimEvent::completion_time() {
  std::lock_guard lk(mu_);
  return time_;
}

uint64_t SimEvent::next_generation() {
  std::lock_guard lk(mu_);
  return ++recorded_;
}

uint64_t SimEvent::last_generation() {
  std::lock_guard lk(mu_);
  return recorded_;
}

void SimEvent::complete(uint64_t generation) {
  // Notified under the lock: a host thread may destroy the event as soon as its synchronize() returns,
  // which it cannot do before this worker has released mu_, so cv_ is no longer in use by then.
  std::lock_guard lk(mu_);
  if (generation > completed_) completed_ = generation;
  time_ = now_seconds();
  cv_.notify_all();
}

void SimEvent::wait_for(uint64_t generation) {
  if (ignored_) return;
  std::unique_lock lk(mu_);
  cv_.wait(lk, [&] { return completed_ >= generation; });
}

void SimKernelTally::add(const char* label, double seconds) {
  std::lock_guard lk(mu_);
  KernelRecord& r = records_[label];
  if (r.name.empty()) r.name = label;
  ++r.count;
  r.seconds += seconds;
}

std::vector<KernelRecord> SimKernelTally::take() {
  std::lock_guard lk(mu_);
  std::vector<KernelRecord> out;
  for (auto& [label, r] : records_) out.push_back(std::move(r));
  records_.clear();
  std::sort(out.begin(), out.end(), [](const KernelRecord& a, const KernelRecord& b) { return a.seconds > b.seconds; });
  return out;
}

SimStream::SimStream(std::string name, SimStreamOptions options) : Stream(std::move(name)), o_(options) {
  worker_ = std::thread([this] { worker_main(); });
}

SimStream::~SimStream() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  worker_.join();
}

SimEvent& SimStream::as_sim(Event& e, const std::string& stream) {
  auto* se = dynamic_cast<SimEvent*>(&e);
  ST_CHECK(se != nullptr, "sim stream '", stream, "' cannot use event '", e.label(), "' of another backend");
  return *se;
}

void SimStream::worker_main() {
  // OpenMP settings are per thread: the oneDNN kernels this worker runs use the cpu thread count.
  omp_set_num_threads(o_.omp_threads);
  uint64_t draws = 0;
  for (;;) {
    Item item;
    {
      std::unique_lock lk(mu_);
      work_cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    if (o_.max_delay_us > 0) {
      const float u = kernels::uniform01(o_.delay_seed, 0x5173, draws++);
      std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(u * static_cast<float>(o_.max_delay_us))));
    }
    std::exception_ptr failed;
    try {
      run(item);
    } catch (...) {
      failed = std::current_exception();
    }
    {
      std::lock_guard lk(mu_);
      if (failed && !error_) error_ = failed;
      ++done_;
    }
    done_cv_.notify_all();
  }
}

void SimStream::run(Item& item) {
  SimKernelTally* tally = item.label ? tally_.load() : nullptr;
  if (!tally) {
    item.work();
    return;
  }
  const double t0 = now_seconds();
  item.work();
  tally->add(item.label, now_seconds() - t0);
}

void SimStream::rethrow_error() {
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

void SimStream::enqueue(std::function<void()> work) { push({nullptr, std::move(work)}); }

void SimStream::enqueue_kernel(const char* label, std::function<void()> work) { push({label, std::move(work)}); }

bool SimStream::enqueue_quietly(std::function<void()> work) {
  {
    std::lock_guard lk(mu_);
    if (stop_) return false;
    queue_.push_back({nullptr, std::move(work)});
    ++queued_;
  }
  work_cv_.notify_one();
  return true;
}

void SimStream::push(Item item) {
  {
    std::lock_guard lk(mu_);
    rethrow_error();
    queue_.push_back(std::move(item));
    ++queued_;
  }
  work_cv_.notify_one();
}

void SimStream::record(Event& e) {
  SimEvent& se = as_sim(e, name());
  const uint64_t gen = se.next_generation();
  enqueue([&se, gen] { se.complete(gen); });
}

void SimStream::wait(Event& e) {
  SimEvent& se = as_sim(e, name());
  const uint64_t gen = se.last_generation();
  if (gen == 0) return;
  enqueue([&se, gen] { se.wait_for(gen); });
}

void SimStream::drain() {
  std::unique_lock lk(mu_);
  const uint64_t target = queued_;
  done_cv_.wait(lk, [&] { return done_ >= target; });
  rethrow_error();
}

}  // namespace scaletrain::sim
