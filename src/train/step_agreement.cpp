// StepAgreement: the step's host flags as one int32 array, all-reduced with MAX, blocking or in two
// halves.
#include "scaletrain/train/step_agreement.hpp"

#include <type_traits>

#include "scaletrain/core/error.hpp"

namespace scaletrain::train {
namespace {

constexpr int64_t kFlagWords = static_cast<int64_t>(sizeof(StepFlags) / sizeof(int32_t));
static_assert(std::is_trivially_copyable_v<StepFlags> && sizeof(StepFlags) % sizeof(int32_t) == 0);

}  // namespace

StepFlags agree(comm::Communicator& comm, const StepFlags& local) {
  StepFlags all = local;
  comm.allreduce(&all, kFlagWords, DType::i32, comm::ReduceOp::max);
  return all;
}

void HostAgreement::start(const StepFlags& local) {
  ST_CHECK(!request_, "HostAgreement::start: the previous agreement was not finished");
  flags_ = local;
  request_ = comm_.allreduce_async(&flags_, kFlagWords, DType::i32, comm::ReduceOp::max);
}

StepFlags HostAgreement::finish() {
  ST_CHECK(request_ != nullptr, "HostAgreement::finish: no agreement was started");
  request_->wait();
  request_.reset();
  return flags_;
}

}  // namespace scaletrain::train
