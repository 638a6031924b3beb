// Communicator: the collective operations data-parallel training needs (in-place all-reduce,
// asynchronous with a Request, broadcast, gather, allgather, barrier), independent of transport.
// MPI on host buffers (mpi_communicator.hpp); NCCL on device buffers (nccl_communicator.hpp), whose
// all-reduces are also queued on a device stream behind an event, with no host thread waiting
// (queue_allreduce), as gradient buckets use them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "scaletrain/core/dtype.hpp"

namespace scaletrain {
class Event;
}

namespace scaletrain::comm {

// avg: the sum divided by the number of ranks (ncclAvg); device communicators only.
enum class ReduceOp { sum, max, min, avg };

std::string_view reduce_op_name(ReduceOp op);

// An operation in flight. test() drives progress and says whether it has completed; wait()
// blocks until it has. Both may be called again after completion (they return at once).
// Destroying an unfinished Request waits for it: the buffer must not be reused under it.
class Request {
 public:
  virtual ~Request();
  virtual bool test() = 0;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Rank and size among the ranks that share this rank's host (MPI_Comm_split_type SHARED).
  virtual int local_rank() const = 0;
  virtual int local_size() const = 0;
  virtual const std::string& host() const = 0;

  // In-place all-reduce of count elements of dtype in buf (a host buffer for MPI, a device buffer
  // for NCCL). The buffer must stay untouched until the request completes.
  virtual std::unique_ptr<Request> allreduce_async(void* buf, int64_t count, DType dtype, ReduceOp op) = 0;
  virtual void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) = 0;
  virtual void broadcast(void* buf, int64_t bytes, int root) = 0;
  // recv (significant on root only) holds size() * bytes_per_rank bytes, in rank order.
  virtual void gather(const void* send, int64_t bytes_per_rank, void* recv, int root) = 0;
  // recv holds size() * bytes_per_rank bytes on every rank, in rank order.
  virtual void allgather(const void* send, int64_t bytes_per_rank, void* recv) = 0;
  virtual void barrier() = 0;
  virtual std::string name() const = 0;
  // Ends every rank of the job now with `exit_code` (MPI_Abort; a device communicator aborts its
  // own operations first). Any thread may call it.
  [[noreturn]] virtual void abort(int exit_code) = 0;

  // Whether a thread other than the one that created the communicator may issue its operations
  // (one thread at a time). MPI: the library was initialized with at least MPI_THREAD_SERIALIZED.
  virtual bool allows_other_threads() const { return true; }

  // Device communicators: collectives on device buffers, queued on the backend's communication
  // stream. queue_allreduce makes that stream wait for `ready` (recorded on another stream behind
  // the work that writes buf), queues the in-place all-reduce and records `done` behind it; the
  // caller's stream then waits for `done`. Nothing blocks the host. Host communicators (MPI)
  // return false and throw from queue_allreduce.
  virtual bool queues_on_stream() const { return false; }
  virtual void queue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op, Event& ready, Event& done);
  // Throws an Error naming the rank when the transport has failed asynchronously (NCCL's
  // ncclCommGetAsyncError); nothing to check for MPI, whose calls report their own errors.
  virtual void check_async_error() {}
};

// `s` from `root` to every rank (its length, then its bytes).
void broadcast_string(Communicator& comm, std::string& s, int root);
// Every rank's `mine` (its first 255 characters), in rank order, on every rank.
std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine);

}  // namespace scaletrain::comm
