// Out-of-line anchors of the Communicator and Request interfaces, and ReduceOp names.
#include "scaletrain/comm/communicator.hpp"

#include <cstdio>

#include "scaletrain/core/error.hpp"

namespace scaletrain::comm {

Request::~Request() = default;
Communicator::~Communicator() = default;

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

void Communicator::queue_allreduce(void*, int64_t, DType, ReduceOp, Event&, Event&) {
  ST_FAIL("the ", name(), " communicator works on host buffers and cannot queue an all-reduce on a device stream");
}

void broadcast_string(Communicator& comm, std::string& s, int root) {
  int64_t n = static_cast<int64_t>(s.size());
  comm.broadcast(&n, sizeof n, root);
  s.resize(static_cast<size_t>(n));
  if (n > 0) comm.broadcast(s.data(), n, root);
}

std::vector<std::string> allgather_strings(Communicator& comm, const std::string& mine) {
  constexpr size_t kLen = 256;
  char buf[kLen] = {};
  std::snprintf(buf, kLen, "%s", mine.c_str());
  std::vector<char> all(kLen * static_cast<size_t>(comm.size()));
  comm.allgather(buf, kLen, all.data());
  std::vector<std::string> out;
  for (int r = 0; r < comm.size(); ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * kLen);
  return out;
}

}  // namespace scaletrain::comm
