// ConsistentError: an error every rank detects identically (a bad configuration, a batch that does
// not divide by the ranks, a missing data file), so rank 0 alone reports it and every rank exits
// cleanly, without MPI_Abort. collective_check turns a step that may fail on some ranks into one.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::train {

class ConsistentError : public std::runtime_error {
 public:
  explicit ConsistentError(const std::string& what) : std::runtime_error(what) {}
};

// Runs f on every rank and agrees (one all-reduce) on whether it failed anywhere.
// - Failed on every rank: every rank throws ConsistentError with its own message; rank 0 alone
//   prints it and every rank exits cleanly (one message, no MPI_Abort).
// - Failed on some ranks only: those ranks rethrow their exception, which the app reports and
//   ends with MPI_Abort; the healthy ranks wait at a barrier that the failing ranks never reach,
//   so they print nothing and the failing rank's message is the one printed; MPI_Abort then ends
//   them too. The caller must therefore let a rethrown error reach the app's MPI_Abort.
void collective_check(comm::Communicator& comm, const std::function<void()>& f);

// Runs f on rank 0 only (work on replicated state, such as writing a checkpoint) and broadcasts
// the outcome: if it failed, every rank throws ConsistentError with rank 0's message.
void root_check(comm::Communicator& comm, const std::function<void()>& f);

}  // namespace scaletrain::train
