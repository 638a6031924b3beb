// NcclCommunicator: a ncclComm_t bootstrapped through the host communicator (ncclGetUniqueId on rank
// 0, MPI_Bcast, ncclCommInitRank), collectives queued on the CUDA backend's communication stream,
// the asynchronous-error poller, and ncclCommAbort before the host communicator's abort.
#include "scaletrain/comm/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "scaletrain/comm/nccl_bootstrap.hpp"
#include "scaletrain/comm/stream_communicator.hpp"
#include "scaletrain/core/check_cuda.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::comm {
namespace {

static_assert(NCCL_UNIQUE_ID_BYTES == kNcclUniqueIdBytes && sizeof(ncclUniqueId) == kNcclUniqueIdBytes,
              "nccl_bootstrap.hpp's id size must be NCCL's");

// How often the poller thread asks NCCL for an asynchronous error.
constexpr auto kAsyncErrorPollInterval = std::chrono::milliseconds(100);

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::f32: return ncclFloat32;
    case DType::f64: return ncclFloat64;
    case DType::f16: return ncclFloat16;
    case DType::bf16: return ncclBfloat16;
    case DType::i32: return ncclInt32;
    case DType::i64: return ncclInt64;
    case DType::u8: return ncclUint8;
  }
  ST_FAIL("no NCCL data type for dtype ", static_cast<int>(t));
}

// avg: ncclAvg (NCCL pre-multiplies floating types by 1/world rounded to the type, then sums).
ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::max: return ncclMax;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::avg: return ncclAvg;
  }
  ST_FAIL("unknown ReduceOp ", static_cast<int>(op));
}

size_t elements(int64_t n) { return static_cast<size_t>(n); }

// nccl-tests' bootstrap through bootstrap_nccl (the sequence is tested on the CPU).
ncclComm_t init_nccl(Communicator& host) {
  return bootstrap_nccl(
      host,
      [](NcclUniqueIdBytes& id) {
        ncclUniqueId u;
        ST_NCCL_CHECK(ncclGetUniqueId(&u));
        std::memcpy(id.data(), &u, sizeof u);
      },
      [](int world, const NcclUniqueIdBytes& id, int rank) {
        ncclUniqueId u;
        std::memcpy(&u, id.data(), sizeof u);
        ncclComm_t comm = nullptr;
        ST_NCCL_CHECK(ncclCommInitRank(&comm, world, u, rank));
        return comm;
      });
}

class NcclCommunicator final : public StreamCommunicator {
 public:
  NcclCommunicator(Communicator& host, Backend& backend)
      : StreamCommunicator(host, backend), stream_(static_cast<cudaStream_t>(backend.comm_stream().cuda_handle())) {
    ST_CHECK(stream_ != nullptr, "comm.backend = nccl needs the CUDA backend (run.device = cuda): the ",
             device_name(backend.device()), " device has no CUDA streams");
    comm_ = init_nccl(host);
    poller_ = std::thread([this] { poll_main(); });
  }
  ~NcclCommunicator() override;

  std::string name() const override { return "nccl"; }
  void check_async_error() override;

 protected:
  void enqueue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    ST_NCCL_CHECK(ncclAllReduce(buf, buf, elements(count), nccl_type(dtype), nccl_op(op), comm_, stream_));
  }
  void enqueue_broadcast(void* buf, int64_t bytes, int root) override {
    ST_NCCL_CHECK(ncclBroadcast(buf, buf, elements(bytes), ncclUint8, root, comm_, stream_));
  }
  void enqueue_allgather(const void* send, int64_t bytes, void* recv) override {
    ST_NCCL_CHECK(ncclAllGather(send, recv, elements(bytes), ncclUint8, comm_, stream_));
  }
  void enqueue_gather(const void* send, int64_t bytes, void* recv, int root) override;
  void abort_transport() override {
    std::lock_guard lk(mu_);
    abort_locked();
  }

 private:
  // NCCL's asynchronous error; ncclInProgress (an operation still being set up) is not one.
  bool failed_locked(ncclResult_t& error);
  std::string describe_locked(ncclResult_t error);
  void abort_locked();  // ncclCommAbort, once
  void poll_main();

  cudaStream_t stream_;
  ncclComm_t comm_ = nullptr;
  std::mutex mu_;  // the error query and the abort, which the poller, the watchdog and the caller may race on
  bool aborted_ = false;
  bool stop_ = false;
  std::condition_variable stop_cv_;
  std::thread poller_;
};

// Rank 0 receives every rank's bytes (its own included: NCCL sends to self within a group).
void NcclCommunicator::enqueue_gather(const void* send, int64_t bytes, void* recv, int root) {
  ST_NCCL_CHECK(ncclGroupStart());
  ncclResult_t rc = ncclSend(send, elements(bytes), ncclUint8, root, comm_, stream_);
  for (int peer = 0; rank() == root && peer < size() && rc == ncclSuccess; ++peer)
    rc = ncclRecv(static_cast<char*>(recv) + static_cast<size_t>(peer) * elements(bytes), elements(bytes), ncclUint8,
                  peer, comm_, stream_);
  const ncclResult_t end = ncclGroupEnd();  // always closes the group, even after a failed call inside it
  ST_NCCL_CHECK(rc);
  ST_NCCL_CHECK(end);
}

bool NcclCommunicator::failed_locked(ncclResult_t& error) {
  if (aborted_) return false;
  const ncclResult_t rc = ncclCommGetAsyncError(comm_, &error);
  if (rc != ncclSuccess) error = rc;
  return error != ncclSuccess && error != ncclInProgress;
}

std::string NcclCommunicator::describe_locked(ncclResult_t error) {
  const char* last = ncclGetLastError(comm_);
  std::string d = ncclGetErrorString(error);
  if (last && *last) d += std::string(" (") + last + ")";
  return d;
}

void NcclCommunicator::abort_locked() {
  if (aborted_ || !comm_) return;
  aborted_ = true;
  const ncclResult_t rc = ncclCommAbort(comm_);
  if (rc != ncclSuccess)
    std::fprintf(stderr, "scaletrain: warning: rank %d: ncclCommAbort failed: %s\n", rank(), ncclGetErrorString(rc));
}

void NcclCommunicator::check_async_error() {
  std::string what;
  {
    std::lock_guard lk(mu_);
    ncclResult_t error = ncclSuccess;
    if (!failed_locked(error)) {
      ST_CHECK(!aborted_, "the NCCL communicator has been aborted");
      return;
    }
    what = describe_locked(error);
    abort_locked();  // before the error unwinds through code that synchronizes the device
  }
  throw_error(__FILE__, __LINE__, "NCCL",
              "NCCL failed asynchronously: " + what + "; the NCCL communicator was aborted");
}

// Every 100 ms: on an asynchronous error, one line naming the rank, ncclCommAbort, then MPI_Abort.
void NcclCommunicator::poll_main() {
  std::unique_lock lk(mu_);
  while (!stop_cv_.wait_for(lk, kAsyncErrorPollInterval, [&] { return stop_ || aborted_; })) {
    ncclResult_t error = ncclSuccess;
    if (!failed_locked(error)) continue;
    std::fprintf(stderr, "scaletrain: error: rank %d (host %s): NCCL failed asynchronously: %s; aborting the job\n",
                 rank(), host().c_str(), describe_locked(error).c_str());
    std::fflush(stderr);
    abort_locked();
    lk.unlock();
    host_comm().abort(1);
  }
}

NcclCommunicator::~NcclCommunicator() {
  bool aborted = false;
  {
    std::lock_guard lk(mu_);
    aborted = aborted_;
  }
  try {
    if (!aborted) drain();  // nothing queued may outlive the communicator (checks for errors while it waits)
  } catch (...) {
    // The error aborted NCCL; it was reported by whoever saw it first.
  }
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  poller_.join();
  if (aborted_ || !comm_) return;
  const ncclResult_t rc = ncclCommDestroy(comm_);
  if (rc != ncclSuccess)
    std::fprintf(stderr, "scaletrain: warning: rank %d: ncclCommDestroy failed: %s\n", rank(), ncclGetErrorString(rc));
}

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(Communicator& host, Backend& backend) {
  return std::make_unique<NcclCommunicator>(host, backend);
}

}  // namespace scaletrain::comm
