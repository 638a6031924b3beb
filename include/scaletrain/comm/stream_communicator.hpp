// StreamCommunicator: what a device communicator (NCCL; on the simulated device, its simulation with
// MPI) does the same way whatever the transport. Collectives work on device buffers and are queued
// on the backend's communication stream behind the compute stream's work, or behind the caller's
// event (queue_allreduce); completion is an event; host waits poll for asynchronous transport
// errors; ranks, hosts and the final abort come from the host communicator (MPI).
#pragma once
#include <memory>
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

class StreamCommunicator : public Communicator {
 public:
  StreamCommunicator(Communicator& host, Backend& backend);
  ~StreamCommunicator() override;
  StreamCommunicator(const StreamCommunicator&) = delete;
  StreamCommunicator& operator=(const StreamCommunicator&) = delete;

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  int local_rank() const override { return host_.local_rank(); }
  int local_size() const override { return host_.local_size(); }
  const std::string& host() const override { return host_.host(); }

  // Device buffers, ordered after the work queued on the compute stream so far. The blocking calls
  // return once the result is in the buffer; the request completes with the operation.
  std::unique_ptr<Request> allreduce_async(void* buf, int64_t count, DType dtype, ReduceOp op) override;
  void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) override;
  void broadcast(void* buf, int64_t bytes, int root) override;
  void gather(const void* send, int64_t bytes_per_rank, void* recv, int root) override;
  void allgather(const void* send, int64_t bytes_per_rank, void* recv) override;
  void barrier() override;
  // Stops the transport (abort_transport), then ends the job through the host communicator.
  [[noreturn]] void abort(int exit_code) override;

  bool queues_on_stream() const override { return true; }
  void queue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op, Event& ready, Event& done) override;

 protected:
  // The transport's part: queue the operation on the communication stream, in stream order after
  // whatever was queued there before (the base has made that stream wait where needed).
  virtual void enqueue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) = 0;
  virtual void enqueue_broadcast(void* buf, int64_t bytes, int root) = 0;
  virtual void enqueue_gather(const void* send, int64_t bytes_per_rank, void* recv, int root) = 0;
  virtual void enqueue_allgather(const void* send, int64_t bytes_per_rank, void* recv) = 0;
  // Stops the transport's operations (ncclCommAbort) before the host communicator ends the job.
  virtual void abort_transport() {}

  Communicator& host_comm() { return host_; }
  Backend& backend() { return backend_; }
  Stream& stream() { return backend_.comm_stream(); }
  // Blocks the host until everything queued on the communication stream so far has run, checking
  // for asynchronous errors while it waits.
  void drain();

 private:
  void after_compute();            // the communication stream waits for the compute stream's work so far
  void wait_polling(Event& done);  // host wait that calls check_async_error() between polls
  void check_root(int root, const char* what) const;

  Communicator& host_;
  Backend& backend_;
  std::unique_ptr<Event> compute_done_;  // recorded on the compute stream before each collective
  std::unique_ptr<Event> finished_;      // recorded on the communication stream behind a blocking call
  Tensor barrier_scratch_;               // one device int for barrier()
};

}  // namespace scaletrain::comm
