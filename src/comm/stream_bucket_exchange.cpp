// The stream-ordered bucket exchange: a device communicator (NCCL, or its simulation on sim) queues
// each bucket's average on the communication stream behind its ready event, between a begin and a
// done event; the compute stream waits for the last one. The host never waits; the events become
// the step's timings once they have completed, read in a later step (each step records a set of
// events of its own until its times are read).
#include "scaletrain/comm/bucket_exchange.hpp"

#include <string>
#include <vector>

namespace scaletrain::comm {
namespace {

class StreamBucketExchange final : public BucketExchange {
 public:
  explicit StreamBucketExchange(const BucketLayout& layout) : layout_(layout) {}
  ~StreamBucketExchange() override {
    try {
      layout_.backend.comm_stream().synchronize();  // its queued all-reduces wait on and record events
    } catch (...) {
      // Reported by the call that saw it first.
    }
  }
  std::string name() const override { return bucket_transport_name(BucketTransport::stream_ordered); }
  bool averages() const override { return true; }
  bool host_driven() const override { return false; }

  std::unique_ptr<Request> start(size_t b, Event& ready) override {
    if (b == 0) begin_set();
    EventSet& set = *sets_[current_];
    Stream& s = layout_.backend.comm_stream();
    const BucketSpan& k = layout_.buckets[b];
    const Tensor& t = layout_.reduced;
    s.wait(ready);
    s.record(*set.begin[b]);  // the all-reduce starts here: its gradients are ready, the previous one done
    void* data = static_cast<char*>(t.device_raw()) + k.offset * static_cast<int64_t>(dtype_size(t.dtype()));
    layout_.comm.queue_allreduce(data, k.count, t.dtype(), ReduceOp::avg, ready, *set.done[b]);
    // The compute stream's point where the last bucket is ready: backward is done there.
    if (b + 1 == layout_.buckets.size()) layout_.backend.compute_stream().record(*set.backward_done);
    return nullptr;
  }

  void end_step() override {
    layout_.comm.check_async_error();
    // The communication stream runs in order: its last all-reduce done means all of them are.
    if (!sets_.empty()) layout_.backend.compute_stream().wait(*sets_[current_]->done.back());
  }

  bool step_times(bool block, std::vector<BucketTimes>& times, double* backward_done) override {
    if (queued_.empty()) return false;
    EventSet& set = *sets_[queued_.front()];
    Event& last = *set.done.back();
    if (block)
      last.synchronize();
    else if (!last.query())
      return false;
    times.clear();
    for (size_t b = 0; b < set.done.size(); ++b)
      times.push_back(BucketTimes{set.begin[b]->completion_time(), set.done[b]->completion_time()});
    *backward_done = set.backward_done->completion_time();
    set.queued = false;
    queued_.erase(queued_.begin());
    return true;
  }

 private:
  // One step's events: per bucket, its all-reduce began / is done; backward done on the compute stream.
  struct EventSet {
    std::vector<std::unique_ptr<Event>> begin, done;
    std::unique_ptr<Event> backward_done;
    bool queued = false;  // recorded, its times not read yet
  };

  // The step's events: a set whose times were read, or a new one, so that a step's events are never
  // recorded again before they are read and the host never waits for them.
  void begin_set() {
    size_t i = 0;
    while (i < sets_.size() && sets_[i]->queued) ++i;
    if (i == sets_.size()) {
      auto set = std::make_unique<EventSet>();
      for (size_t b = 0; b < layout_.buckets.size(); ++b) {
        set->begin.push_back(layout_.backend.make_event("bucket all-reduce begin " + std::to_string(b)));
        set->done.push_back(layout_.backend.make_event("bucket all-reduce done " + std::to_string(b)));
      }
      set->backward_done = layout_.backend.make_event("backward done");
      sets_.push_back(std::move(set));
    }
    sets_[i]->queued = true;
    queued_.push_back(i);
    current_ = i;
  }

  BucketLayout layout_;
  std::vector<std::unique_ptr<EventSet>> sets_;
  std::vector<size_t> queued_;  // sets recorded and not read, oldest first
  size_t current_ = 0;
};

}  // namespace

std::unique_ptr<BucketExchange> make_stream_bucket_exchange(const BucketLayout& layout) {
  return std::make_unique<StreamBucketExchange>(layout);
}

}  // namespace scaletrain::comm
