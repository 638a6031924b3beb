// DeviceStepState: the trainer's side of the step state in device memory (kernels/step_state.hpp).
// Each step it queues, on the compute stream and without waiting: this rank's inf/NaN verdict (a
// count per parameter tensor, the loss's mark), the verdict's all-reduce across ranks (in stream order on a device communicator; through the host
// where the gradients travel by MPI), the decision that the optimizer's update and the loss scaler
// read, and a copy of state and verdict into pinned memory. The host reads those copies once they
// have completed, a step or more later (completed(false) never waits); the points that drain the
// device anyway (logging, checkpoints, the end) read them all and bring the host's loss scaler and
// optimizer counters up to date (pull).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/comm/communicator.hpp"
#include "scaletrain/kernels/step_state.hpp"
#include "scaletrain/optim/loss_scaler.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::train {

// One step as the host reads it back.
struct StepOutcome {
  int64_t step = 0, epoch = 0;
  kernels::StepState state;         // after the step's decision
  std::vector<double> tensor_counts;  // inf/NaN values per parameter tensor, in offset order
  int32_t loss_mark = 0;            // world - the lowest rank whose loss held inf/NaN (0: none)
  bool nonfinite() const { return state.skip != 0; }
};

class DeviceStepState {
 public:
  // `tensors`: each parameter tensor's first element and length in the flat gradients, in any
  // order (they must tile the buffer); the verdict counts them in offset order.
  DeviceStepState(Backend& backend, const std::vector<std::pair<int64_t, int64_t>>& tensors,
                  const kernels::StepRules& rules, int rank, int world);
  ~DeviceStepState();

  // The device's state from the host's: the next step, the loss scaler, the updates applied (at
  // start-up and after a resume). Synchronizes.
  void push(int64_t step, const optim::LossScaler& scaler, int64_t updates);
  // The host's loss scaler and optimizer counters from the device's state (synchronizes).
  void pull(optim::LossScaler& scaler, optim::Optimizer& optimizer);

  // Device memory the step's kernels read.
  const kernels::StepState* device() const;
  const double* loss_scale() const;       // fp16's scale, for the loss's gradient
  const double* step() const;             // the step number, for dropout and augmentation
  const double* local_loss_mark() const;  // this rank's loss mark, between verdict() and agree()

  // The verdict of the reduced gradients and this rank's row losses; `inject_overflow` sets the
  // injected flag (testing.inject_overflow_*).
  void verdict(const Tensor& grads, const Tensor& row_losses, bool inject_overflow);
  // The verdict of every rank combined (MAX): in stream order where `gradient_comm` queues on a
  // stream, else through the host over `host_comm`. Nothing on one rank.
  void agree(comm::Communicator& gradient_comm, comm::Communicator& host_comm);
  // The step's decision, then the copy of state and verdict for the host.
  void decide(int64_t step, int64_t epoch);

  // The steps whose copies have completed, in step order, each once; `drain`: every step queued,
  // waiting for them.
  std::vector<StepOutcome> completed(bool drain);
  // An outcome's counts per parameter tensor, in the order of the constructor's list.
  std::vector<double> counts_by_tensor(const StepOutcome& o) const;

 private:
  struct Readback;
  Readback& free_readback();

  Backend& backend_;
  kernels::StepRules rules_;
  int rank_, world_;
  std::vector<size_t> order_;           // tensors by offset
  std::vector<int64_t> offsets_;        // their first elements in that order, then the gradients' length
  kernels::VerdictLayout layout_;
  Tensor state_;                        // f64 [kStepStateDoubles + layout_.size()]: state, then verdict
  Tensor verdict_;                      // the view of its verdict
  Tensor host_verdict_;                 // pinned: the verdict's trip through the host (MPI)
  optim::VerdictScratch scratch_;
  std::unique_ptr<Event> verdict_ready_, verdict_agreed_;
  std::vector<std::unique_ptr<Readback>> readbacks_;
  std::vector<size_t> queued_;          // readbacks in flight, oldest first
};

}  // namespace scaletrain::train
