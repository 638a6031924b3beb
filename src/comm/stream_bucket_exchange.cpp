// The stream-ordered bucket exchange: a device communicator (NCCL, or its simulation on sim) queues
// each bucket's average on the communication stream behind its ready event, between a begin and a
// done event; the compute stream waits for the last one. The host never waits; the events become
// the step's timings once they have completed.
#include "scaletrain/comm/bucket_exchange.hpp"

#include <string>
#include <vector>

namespace scaletrain::comm {
namespace {

class StreamBucketExchange final : public BucketExchange {
 public:
  explicit StreamBucketExchange(const BucketLayout& layout) : layout_(layout) {
    for (size_t b = 0; b < layout_.buckets.size(); ++b) {
      begin_.push_back(layout_.backend.make_event("bucket all-reduce begin " + std::to_string(b)));
      done_.push_back(layout_.backend.make_event("bucket all-reduce done " + std::to_string(b)));
    }
  }
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
    Stream& s = layout_.backend.comm_stream();
    const BucketSpan& k = layout_.buckets[b];
    const Tensor& t = layout_.reduced;
    s.wait(ready);
    s.record(*begin_[b]);  // the all-reduce starts here: its gradients are ready, the previous one done
    void* data = static_cast<char*>(t.device_raw()) + k.offset * static_cast<int64_t>(dtype_size(t.dtype()));
    layout_.comm.queue_allreduce(data, k.count, t.dtype(), ReduceOp::avg, ready, *done_[b]);
    queued_ = true;
    return nullptr;
  }

  void end_step() override {
    layout_.comm.check_async_error();
    // The communication stream runs in order: its last all-reduce done means all of them are.
    if (!done_.empty()) layout_.backend.compute_stream().wait(*done_.back());
  }

  bool step_times(bool block, std::vector<BucketTimes>& times) override {
    if (!queued_) return false;
    Event& last = *done_.back();
    if (block)
      last.synchronize();
    else if (!last.query())
      return false;
    times.clear();
    for (size_t b = 0; b < done_.size(); ++b)
      times.push_back(BucketTimes{begin_[b]->completion_time(), done_[b]->completion_time()});
    queued_ = false;
    return true;
  }

 private:
  BucketLayout layout_;
  std::vector<std::unique_ptr<Event>> begin_, done_;  // per bucket: its all-reduce began / is done
  bool queued_ = false;                               // all-reduces queued whose times were not read
};

}  // namespace

std::unique_ptr<BucketExchange> make_stream_bucket_exchange(const BucketLayout& layout) {
  return std::make_unique<StreamBucketExchange>(layout);
}

}  // namespace scaletrain::comm
