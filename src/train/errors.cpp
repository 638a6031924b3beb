// collective_check: agree across ranks on whether a start-up step failed.
#include "scaletrain/train/errors.hpp"

#include <exception>

namespace scaletrain::train {

void collective_check(comm::Communicator& comm, const std::function<void()>& f) {
  std::exception_ptr failure;
  std::string message;
  try {
    f();
  } catch (const ConsistentError& e) {
    failure = std::current_exception();
    message = e.what();
  } catch (const std::exception& e) {
    failure = std::current_exception();
    message = e.what();
  }
  int failed = failure ? 1 : 0;
  comm.allreduce(&failed, 1, DType::i32, comm::ReduceOp::sum);
  if (failed == 0) return;
  if (failed == comm.size()) throw ConsistentError(message);
  if (failure) std::rethrow_exception(failure);
  // This rank is fine. It waits here, silent, for the failing ranks: they never reach this barrier,
  // report their own error and call MPI_Abort, which ends this rank too. Throwing here instead would
  // race their message with a second, less useful one.
  comm.barrier();
}

void root_check(comm::Communicator& comm, const std::function<void()>& f) {
  std::string message;
  int failed = 0;
  if (comm.rank() == 0) {
    try {
      f();
    } catch (const std::exception& e) {
      failed = 1;
      message = e.what();
    }
  }
  comm.broadcast(&failed, sizeof failed, 0);
  if (failed == 0) return;
  comm::broadcast_string(comm, message, 0);
  throw ConsistentError(message);
}

}  // namespace scaletrain::train
