// Out-of-line anchors of the Communicator and Request interfaces, and ReduceOp names.
#include "scaletrain/comm/communicator.hpp"

namespace scaletrain::comm {

Request::~Request() = default;
Communicator::~Communicator() = default;

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

}  // namespace scaletrain::comm
