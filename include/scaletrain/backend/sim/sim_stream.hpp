// The simulated device's streams and events. Each SimStream is a worker thread that runs its queue
// in order, asynchronously: work queued has not run when enqueue() returns. A SimEvent counts
// records and completions, so a wait or a query refers to the record made before it, as a CUDA
// event does. Optional random delays before every op shake out missing waits in tests.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "scaletrain/backend/stream.hpp"

namespace scaletrain::sim {

class SimEvent final : public Event {
 public:
  // ignored: a fault injected by tests; the event never makes anyone wait.
  SimEvent(std::string label, bool ignored) : Event(std::move(label)), ignored_(ignored) {}
  bool query() override;
  void synchronize() override;
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
  void record(Event& e) override;
  void wait(Event& e) override;
  void synchronize() override;

 private:
  void worker_main();
  void rethrow_error();
  static SimEvent& as_sim(Event& e, const std::string& stream);

  SimStreamOptions o_;
  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  uint64_t queued_ = 0, done_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace scaletrain::sim
