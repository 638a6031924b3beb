// The CPU backend's stream and event: work runs inside the call that queues it, so an event is
// complete the moment it is recorded and waits have nothing to wait for.
#pragma once
#include "scaletrain/backend/stream.hpp"

namespace scaletrain::cpu {

class InlineEvent final : public Event {
 public:
  explicit InlineEvent(std::string label) : Event(std::move(label)) {}
  bool query() override { return true; }
  double completion_time() override { return time_; }
  void mark();

 private:
  void block() override {}
  double time_ = 0;
};

class InlineStream final : public Stream {
 public:
  explicit InlineStream(std::string name) : Stream(std::move(name)) {}
  bool runs_inline() const override { return true; }
  void enqueue(std::function<void()> work) override { work(); }
  void record(Event& e) override;
  void wait(Event&) override {}

 private:
  void drain() override {}
};

}  // namespace scaletrain::cpu
