// The host-staged bucket exchange: device memory the host cannot read reaches MPI through a pinned
// host mirror. Each ready bucket is copied there on the communication stream (so the compute stream
// runs on), MPI sums the mirror once that copy is done, and the reduced span is copied back on the
// compute stream.
#include "scaletrain/comm/bucket_exchange.hpp"

#include <string>
#include <vector>

namespace scaletrain::comm {
namespace {

class StagedBucketExchange final : public BucketExchange {
 public:
  explicit StagedBucketExchange(const BucketLayout& layout) : layout_(layout) {
    const Tensor& t = layout_.reduced;
    if (t.defined()) mirror_ = layout_.backend.pinned(t.shape(), t.dtype(), t.name() + " (host mirror)");
    for (size_t b = 0; b < layout_.buckets.size(); ++b)
      staged_.push_back(layout_.backend.make_event("bucket staged " + std::to_string(b)));
  }
  ~StagedBucketExchange() override {
    try {
      layout_.backend.comm_stream().synchronize();  // its queued copies wait on and record events
    } catch (...) {
      // Reported by the call that saw it first.
    }
  }
  std::string name() const override { return bucket_transport_name(BucketTransport::host_staged); }

  void bucket_ready(size_t b, Event& ready) override {
    Stream& s = layout_.backend.comm_stream();
    const BucketSpan& k = layout_.buckets[b];
    s.wait(ready);
    layout_.backend.copy_async(s, mirror_.view(k.offset, {k.count}), layout_.reduced.view(k.offset, {k.count}));
    s.record(*staged_[b]);
  }

  Event& start_after(size_t b, Event& /*ready*/) override { return *staged_[b]; }

  std::unique_ptr<Request> start(size_t b, Event& /*ready*/) override {
    const BucketSpan& k = layout_.buckets[b];
    void* data = static_cast<char*>(mirror_.device_raw()) + k.offset * static_cast<int64_t>(dtype_size(mirror_.dtype()));
    return layout_.comm.allreduce_async(data, k.count, mirror_.dtype(), ReduceOp::sum);
  }

  void end_step() override {
    const std::vector<BucketSpan>& k = layout_.buckets;
    if (k.empty()) return;
    const int64_t first = k.front().offset;
    const int64_t span = k.back().offset + k.back().count - first;
    layout_.backend.copy_async(layout_.backend.compute_stream(), layout_.reduced.view(first, {span}),
                               mirror_.view(first, {span}));
  }

 private:
  BucketLayout layout_;
  Tensor mirror_;
  std::vector<std::unique_ptr<Event>> staged_;  // per bucket: its copy to the mirror is done
};

}  // namespace

std::unique_ptr<BucketExchange> make_staged_bucket_exchange(const BucketLayout& layout) {
  return std::make_unique<StagedBucketExchange>(layout);
}

}  // namespace scaletrain::comm
