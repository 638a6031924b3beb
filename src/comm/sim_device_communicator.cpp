// SimDeviceCommunicator: the NCCL path on the simulated device. The transport is MPI called from the
// sim communication stream's worker thread on a private communicator; the averaging follows the MPI
// path for f32/f64 and ncclAvg's pre-multiplication for bf16/f16.
#include "scaletrain/comm/sim_device_communicator.hpp"

#include <mpi.h>

#include "scaletrain/comm/mpi_communicator.hpp"
#include "scaletrain/comm/stream_communicator.hpp"
#include "scaletrain/core/check_mpi.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/scale.hpp"

namespace scaletrain::comm {
namespace {

const char* thread_level_name(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
    default: return "an unknown level";
  }
}

void check_thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  ST_MPI_CHECK(MPI_Query_thread(&provided));
  ST_CHECK(provided == MPI_THREAD_MULTIPLE,
           "the NCCL path on the simulated device runs MPI on the sim communication stream's thread while the "
           "host thread calls MPI too: it needs MPI_THREAD_MULTIPLE, but MPI provides ", thread_level_name(provided),
           " (initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), or use comm.backend = mpi)");
}

// ncclAvg on bf16/f16: each contribution times 1/world rounded to the type (NCCL's PreMulSum), the
// product rounded to the type; the sum follows.
template <class T>
void premultiply_by_reciprocal(T* x, int64_t n, int world) {
  const float r = to_float(from_float<T>(static_cast<float>(1.0 / world)));
  for (int64_t i = 0; i < n; ++i) x[i] = from_float<T>(to_float(x[i]) * r);
}

// The sum's division by the world size: f32 by the very DivideBy functor the MPI path launches (run
// here in a plain loop: this is the communication stream's thread), integers as NCCL divides them
// (truncating).
template <class T>
void divide(T* x, int64_t n, int world) {
  for (int64_t i = 0; i < n; ++i) x[i] = static_cast<T>(x[i] / static_cast<T>(world));
}

void divide_by_world(void* buf, int64_t n, DType dtype, int world) {
  switch (dtype) {
    case DType::f32: {
      const kernels::DivideBy mean{static_cast<float*>(buf), static_cast<float>(world)};
      for (int64_t i = 0; i < n; ++i) mean(i);
      return;
    }
    case DType::f64: return divide(static_cast<double*>(buf), n, world);
    case DType::i32: return divide(static_cast<int32_t*>(buf), n, world);
    case DType::i64: return divide(static_cast<int64_t*>(buf), n, world);
    case DType::u8: return divide(static_cast<uint8_t*>(buf), n, world);
    case DType::bf16:
    case DType::f16: break;
  }
  ST_FAIL("divide_by_world: ", dtype_name(dtype), " is averaged by pre-multiplication");
}

// Runs on the communication stream's worker thread. The sum is MPI_Iallreduce, as the MPI path
// issues it, so that both reduce in the same order and their f32 sums agree bitwise.
void reduce_in_place(Communicator& mpi, void* buf, int64_t n, DType dtype, ReduceOp op) {
  const bool avg = op == ReduceOp::avg;
  const bool half = dtype == DType::bf16 || dtype == DType::f16;
  const int world = mpi.size();
  if (avg && dtype == DType::bf16) premultiply_by_reciprocal(static_cast<bf16*>(buf), n, world);
  if (avg && dtype == DType::f16) premultiply_by_reciprocal(static_cast<f16*>(buf), n, world);
  mpi.allreduce_async(buf, n, dtype, avg ? ReduceOp::sum : op)->wait();
  if (avg && !half) divide_by_world(buf, n, dtype, world);
}

class SimDeviceCommunicator final : public StreamCommunicator {
 public:
  SimDeviceCommunicator(Communicator& host, Backend& backend) : StreamCommunicator(host, backend) {
    ST_CHECK(backend.device() == Device::sim, "the simulated NCCL path needs run.device = sim, not ",
             device_name(backend.device()));
    const MPI_Comm parent = mpi_comm_of(host);
    ST_CHECK(parent != MPI_COMM_NULL, "the simulated NCCL path duplicates an MPI host communicator, not the ",
             host.name(), " communicator");
    check_thread_multiple();
    mpi_ = make_mpi_communicator(parent);
  }
  ~SimDeviceCommunicator() override {
    try {
      stream().synchronize();  // nothing queued may outlive the private communicator
    } catch (...) {
      // Already reported by the call that queued it.
    }
  }
  std::string name() const override { return "nccl-sim"; }

 protected:
  void enqueue_allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) override {
    stream().enqueue_kernel("allreduce", [mpi = mpi_.get(), buf, count, dtype, op] { reduce_in_place(*mpi, buf, count, dtype, op); });
  }
  void enqueue_broadcast(void* buf, int64_t bytes, int root) override {
    stream().enqueue_kernel("broadcast", [mpi = mpi_.get(), buf, bytes, root] { mpi->broadcast(buf, bytes, root); });
  }
  void enqueue_gather(const void* send, int64_t bytes, void* recv, int root) override {
    stream().enqueue_kernel("gather", [mpi = mpi_.get(), send, bytes, recv, root] { mpi->gather(send, bytes, recv, root); });
  }
  void enqueue_allgather(const void* send, int64_t bytes, void* recv) override {
    stream().enqueue_kernel("allgather", [mpi = mpi_.get(), send, bytes, recv] { mpi->allgather(send, bytes, recv); });
  }

 private:
  std::unique_ptr<Communicator> mpi_;  // used only by the communication stream's thread
};

}  // namespace

std::unique_ptr<Communicator> make_sim_device_communicator(Communicator& host, Backend& backend) {
  return std::make_unique<SimDeviceCommunicator>(host, backend);
}

}  // namespace scaletrain::comm
