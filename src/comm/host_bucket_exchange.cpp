// The host bucket exchange: MPI all-reduces (sum) each bucket in place in host memory, once the
// gradients' ready event has completed.
#include "scaletrain/comm/bucket_exchange.hpp"

namespace scaletrain::comm {
namespace {

class HostBucketExchange final : public BucketExchange {
 public:
  explicit HostBucketExchange(const BucketLayout& layout) : layout_(layout) {}
  std::string name() const override { return bucket_transport_name(BucketTransport::host); }

  std::unique_ptr<Request> start(size_t b, Event& /*ready*/) override {
    const BucketSpan& k = layout_.buckets[b];
    const Tensor& t = layout_.reduced;
    void* data = static_cast<char*>(t.device_raw()) + k.offset * static_cast<int64_t>(dtype_size(t.dtype()));
    return layout_.comm.allreduce_async(data, k.count, t.dtype(), ReduceOp::sum);
  }

 private:
  BucketLayout layout_;
};

}  // namespace

std::unique_ptr<BucketExchange> make_host_bucket_exchange(const BucketLayout& layout) {
  return std::make_unique<HostBucketExchange>(layout);
}

}  // namespace scaletrain::comm
