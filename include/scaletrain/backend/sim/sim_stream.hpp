// The simulated device's streams and events. Each SimStream is a worker thread that runs its queue
// in order, asynchronously: work queued has not run when enqueue() returns. A SimEvent counts
// records and completions, so a wait or a query refers to the record made before it, as a CUDA
// event does. Optional random delays before every op shake out missing waits in tests.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scaletrain/backend/kernel_trace.hpp"

#include "scaletrain/backend/stream.hpp"

namespace scaletrain::sim {

class SimEvent final : public Event {
 public:
  // ignored: a fault injected by tests; the event never makes anyone wait.
  SimEvent(std::string label, bool ignored) : Event(std::move(label)), ignored_(ignored) {}
  bool query() override;
  void block() override;
  double completion_time() override;

  // Stream side: a new record returns its generation; the worker completes it.
  uint64_t next_generation();
  uint64_t last_generation();
  void complete(uint64_t generation);
  void wait_for(uint64_t generation);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t recorded_ = 0, completed_ = 0;
  double time_ = 0;
  bool ignored_;
};

// The simulated device's kernel trace: each labelled work item a stream's worker runs while it is
// attached, timed by that worker, summed per label (Backend::make_kernel_trace on sim).
class SimKernelTally {
 public:
  void add(const char* label, double seconds);
  std::vector<KernelRecord> take();

 private:
  std::mutex mu_;
  std::map<std::string, KernelRecord> records_;
};

struct SimStreamOptions {
  int omp_threads = 1;        // OpenMP threads of the worker (the oneDNN kernels it runs)
  int64_t max_delay_us = 0;   // random delay before every op
  uint64_t delay_seed = 1;
};

class SimStream final : public Stream {
 public:
  SimStream(std::string name, SimStreamOptions options);
  ~SimStream() override;
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  bool runs_inline() const override { return false; }
  void enqueue(std::function<void()> work) override;
  void enqueue_kernel(const char* label, std::function<void()> work) override;
  // Queues `work` as enqueue does, but raises no error of the stream's (a release, from a destructor);
  // false, queuing nothing, once the stream is stopping.
  bool enqueue_quietly(std::function<void()> work);
  void record(Event& e) override;
  void wait(Event& e) override;
  // Blocks the host until the queue has run, uncounted (Stream::synchronize counts; the backend's
  // synchronize counts once for all its streams).
  void drain() override;
  // Work items run from now on are timed into `tally` (null: none).
  void trace_into(SimKernelTally* tally) { tally_.store(tally); }

 private:
  struct Item {
    const char* label;  // null: not a kernel (an event's record or wait)
    std::function<void()> work;
  };
  void push(Item item);
  void run(Item& item);
  void worker_main();
  void rethrow_error();
  static SimEvent& as_sim(Event& e, const std::string& stream);

  SimStreamOptions o_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Item> queue_;
  std::atomic<SimKernelTally*> tally_{nullptr};
  uint64_t queued_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace scaletrain::sim
