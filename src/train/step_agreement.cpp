// StepAgreement: the step's flags as one int32 array, all-reduced with MAX.
#include "scaletrain/train/step_agreement.hpp"

#include <type_traits>

namespace scaletrain::train {

StepFlags agree(comm::Communicator& comm, const StepFlags& local) {
  static_assert(std::is_trivially_copyable_v<StepFlags> && sizeof(StepFlags) % sizeof(int32_t) == 0);
  StepFlags all = local;
  comm.allreduce(&all, static_cast<int64_t>(sizeof all / sizeof(int32_t)), DType::i32, comm::ReduceOp::max);
  return all;
}

}  // namespace scaletrain::train
