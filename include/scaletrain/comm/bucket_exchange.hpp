// BucketExchange: how one gradient bucket reaches the other ranks and comes back reduced. The
// bookkeeping around it (which gradients are ready, the order buckets start in, the wire-type
// rounding, the mean, statistics) is GradientBuckets'; an exchange only moves and reduces a bucket
// it is handed. The built-in exchanges are host MPI, host-staged MPI and stream-ordered device
// collectives (one file each); a new one is a class implementing this interface and a factory
// passed to GradientBuckets.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

// A bucket's place in the reduced buffer (elements).
struct BucketSpan {
  int64_t offset;
  int64_t count;
};

// What an exchange reduces: `reduced` (the f32 gradients, or their copy in the wire type) on the
// backend's device, split into `buckets` in index order. The communicator and the backend outlive it.
struct BucketLayout {
  Communicator& comm;
  Backend& backend;
  Tensor reduced;
  std::vector<BucketSpan> buckets;
};

// Start and end of one bucket's all-reduce (steady-clock seconds, as now_seconds()).
struct BucketTimes {
  double start, end;
};

// GradientBuckets calls an exchange only on more than one rank (the sum over one rank is the buffer
// itself), every step in this order: bucket_ready() for each bucket as its gradients are queued (any
// order), start() for each bucket in index order (the same on every rank: collectives on one
// communicator must be issued in one order), then end_step() once every bucket has completed
// (host-driven) or been queued (stream-ordered).
class BucketExchange {
 public:
  virtual ~BucketExchange();
  virtual std::string name() const = 0;  // for the start-up output and run.json
  // Whether the reduction leaves the mean (ncclAvg) rather than the sum. A summing exchange's
  // buffer is divided by GradientBuckets unless the gradients come pre-divided.
  virtual bool averages() const { return false; }
  // Host-driven: start() returns a Request that the host polls or waits on (possibly from a
  // communication thread). Otherwise the all-reduce is queued on the communication stream: start()
  // returns nullptr and the times come from step_times().
  virtual bool host_driven() const { return true; }

  // Bucket b's gradients are queued on the compute stream, with `ready` recorded behind them.
  virtual void bucket_ready(size_t /*b*/, Event& /*ready*/) {}
  // What the host waits for before start(b) (host-driven): by default the gradients' `ready`.
  virtual Event& start_after(size_t /*b*/, Event& ready) { return ready; }
  // Starts bucket b's all-reduce. Host-driven exchanges may be called from a communication thread.
  virtual std::unique_ptr<Request> start(size_t b, Event& ready) = 0;
  // Queues on the compute stream what makes the reduced values visible there.
  virtual void end_step() {}
  // Stream-ordered: the per-bucket times of the oldest step not yet read, and when its backward was
  // done on the compute stream, once its all-reduces have completed (block: waits for them); false
  // while they still run or when every step's times were read.
  virtual bool step_times(bool /*block*/, std::vector<BucketTimes>& /*times*/, double* /*backward_done*/) {
    return false;
  }
};

using BucketExchangeFactory = std::function<std::unique_ptr<BucketExchange>(const BucketLayout&)>;

// The built-in exchanges:
//   host:           the gradients are host memory (cpu backend): MPI reduces them in place once the
//                   bucket's ready event has completed.
//   host_staged:    a host communicator (MPI) with device memory the host cannot read (sim, cuda):
//                   each completed bucket is copied to a pinned host mirror on the communication
//                   stream behind its ready event; MPI reduces the mirror once that copy is done; the
//                   reduced span is copied back on the compute stream.
//   stream_ordered: a device communicator (NCCL, or its simulation on sim): each bucket's average is
//                   queued on the communication stream behind its ready event, and the compute
//                   stream waits for the last one. No host wait, no thread, no MPI_Test.
enum class BucketTransport { host, host_staged, stream_ordered };
BucketTransport bucket_transport(const Communicator& comm, const Backend& backend);
std::string bucket_transport_name(BucketTransport t);  // "host", "host-staged", "stream-ordered"

std::unique_ptr<BucketExchange> make_host_bucket_exchange(const BucketLayout& layout);
std::unique_ptr<BucketExchange> make_staged_bucket_exchange(const BucketLayout& layout);
std::unique_ptr<BucketExchange> make_stream_bucket_exchange(const BucketLayout& layout);
// The built-in exchange bucket_transport() chooses for the layout's communicator and backend.
std::unique_ptr<BucketExchange> make_bucket_exchange(const BucketLayout& layout);

}  // namespace scaletrain::comm
