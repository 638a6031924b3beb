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

// Runs f on every rank. If it throws on every rank, throws ConsistentError with rank 0's message
// (one message, clean exit); if it throws on some ranks only, rethrows there (those ranks report
// and abort) while the others throw ConsistentError naming the failed rank count.
void collective_check(comm::Communicator& comm, const std::function<void()>& f);

}  // namespace scaletrain::train
