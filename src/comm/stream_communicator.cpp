// StreamCommunicator: stream ordering of device collectives, event-based requests, host waits that
// poll for asynchronous transport errors (as nccl-tests polls cudaStreamQuery and
// ncclCommGetAsyncError), and the abort order (transport first, then the host communicator).
#include "scaletrain/comm/stream_communicator.hpp"

#include <chrono>
#include <cstdlib>
#include <thread>

#include "scaletrain/core/error.hpp"

namespace scaletrain::comm {
namespace {

// How long a host wait sleeps between polls of its event and of the transport's error state.
constexpr auto kPollInterval = std::chrono::microseconds(20);

// Completed by an event recorded on the communication stream behind the operation.
class StreamRequest final : public Request {
 public:
  StreamRequest(Communicator& comm, std::unique_ptr<Event> done) : comm_(comm), done_(std::move(done)) {}
  ~StreamRequest() override {
    try {
      wait();
    } catch (...) {
      // Reported by whoever checks the communicator next; the buffer is not reused after an error.
    }
  }
  bool test() override {
    if (done_->query()) return true;
    comm_.check_async_error();
    return false;
  }
  void wait() override {
    while (!test()) std::this_thread::sleep_for(kPollInterval);
  }

 private:
  Communicator& comm_;
  std::unique_ptr<Event> done_;
};

}  // namespace

StreamCommunicator::StreamCommunicator(Communicator& host, Backend& backend)
    : host_(host),
      backend_(backend),
      compute_done_(backend.make_event("comm: compute work before a collective")),
      finished_(backend.make_event("comm: collective finished")) {}

StreamCommunicator::~StreamCommunicator() = default;

void StreamCommunicator::after_compute() {
  backend_.compute_stream().record(*compute_done_);
  stream().wait(*compute_done_);
}

void StreamCommunicator::wait_polling(Event& done) {
  done.counters().host_sync();  // the host waits, polling
  while (!done.query()) {
    check_async_error();
    std::this_thread::sleep_for(kPollInterval);
  }
}

void StreamCommunicator::drain() {
  stream().record(*finished_);
  wait_polling(*finished_);
}

void StreamCommunicator::check_root(int root, const char* what) const {
  ST_CHECK(root >= 0 && root < size(), what, ": root ", root, " is not a rank of this communicator (size ", size(),
           ")");
}

void StreamCommunicator::queue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op, Event& ready,
                                         Event& done) {
  ST_CHECK(count >= 0, "queue_allreduce: count = ", count, " is negative");
  stream().wait(ready);
  stream().counters().call();  // one collective queued
  enqueue_allreduce(buf, count, dtype, op);
  stream().record(done);
}

std::unique_ptr<Request> StreamCommunicator::allreduce_async(void* buf, int64_t count, DType dtype, ReduceOp op) {
  ST_CHECK(count >= 0, "allreduce: count = ", count, " is negative");
  std::unique_ptr<Event> done = backend_.make_event("comm: allreduce done");
  after_compute();
  stream().counters().call();  // one collective queued
  enqueue_allreduce(buf, count, dtype, op);
  stream().record(*done);
  return std::make_unique<StreamRequest>(*this, std::move(done));
}

void StreamCommunicator::allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) {
  allreduce_async(buf, count, dtype, op)->wait();
}

void StreamCommunicator::broadcast(void* buf, int64_t bytes, int root) {
  check_root(root, "broadcast");
  ST_CHECK(bytes >= 0, "broadcast: bytes = ", bytes, " is negative");
  after_compute();
  stream().counters().call();  // one collective queued
  enqueue_broadcast(buf, bytes, root);
  drain();
}

void StreamCommunicator::gather(const void* send, int64_t bytes_per_rank, void* recv, int root) {
  check_root(root, "gather");
  ST_CHECK(bytes_per_rank >= 0, "gather: bytes per rank = ", bytes_per_rank, " is negative");
  after_compute();
  stream().counters().call();  // one collective queued
  enqueue_gather(send, bytes_per_rank, recv, root);
  drain();
}

void StreamCommunicator::allgather(const void* send, int64_t bytes_per_rank, void* recv) {
  ST_CHECK(bytes_per_rank >= 0, "allgather: bytes per rank = ", bytes_per_rank, " is negative");
  after_compute();
  stream().counters().call();  // one collective queued
  enqueue_allgather(send, bytes_per_rank, recv);
  drain();
}

void StreamCommunicator::barrier() {
  // No device transport has a barrier: every rank's one-element all-reduce completes only once every
  // rank has reached it.
  if (!barrier_scratch_.defined()) barrier_scratch_ = backend_.zeros({1}, DType::i32, "comm.barrier");
  allreduce(barrier_scratch_.device_raw(), 1, DType::i32, ReduceOp::sum);
}

void StreamCommunicator::abort(int exit_code) {
  abort_transport();
  host_.abort(exit_code);
  std::abort();  // the host communicator's abort does not return; if it did, this process must still end
}

}  // namespace scaletrain::comm
