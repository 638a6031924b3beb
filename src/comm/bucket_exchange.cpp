// The built-in bucket exchanges: which one a communicator and a backend call for, and its name.
#include "scaletrain/comm/bucket_exchange.hpp"

namespace scaletrain::comm {

BucketExchange::~BucketExchange() = default;

BucketTransport bucket_transport(const Communicator& comm, const Backend& backend) {
  if (comm.queues_on_stream()) return BucketTransport::stream_ordered;
  if (!host_accessible(backend.device())) return BucketTransport::host_staged;
  return BucketTransport::host;
}

std::string bucket_transport_name(BucketTransport t) {
  switch (t) {
    case BucketTransport::host: return "host";
    case BucketTransport::host_staged: return "host-staged";
    case BucketTransport::stream_ordered: return "stream-ordered";
  }
  return "?";
}

std::unique_ptr<BucketExchange> make_bucket_exchange(const BucketLayout& layout) {
  switch (bucket_transport(layout.comm, layout.backend)) {
    case BucketTransport::host: return make_host_bucket_exchange(layout);
    case BucketTransport::host_staged: return make_staged_bucket_exchange(layout);
    case BucketTransport::stream_ordered: return make_stream_bucket_exchange(layout);
  }
  return nullptr;
}

}  // namespace scaletrain::comm
