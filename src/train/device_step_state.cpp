// DeviceStepState: the verdict, its agreement, the decision and the host's delayed reads.
#include "scaletrain/train/device_step_state.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain::train {

// One step's copy of state and verdict in pinned memory, and the event behind it.
struct DeviceStepState::Readback {
  Tensor host;
  std::unique_ptr<Event> copied;
  int64_t step = 0, epoch = 0;
  bool queued = false;
};

DeviceStepState::DeviceStepState(Backend& backend, const std::vector<std::pair<int64_t, int64_t>>& tensors,
                                 const kernels::StepRules& rules, int rank, int world)
    : backend_(backend), rules_(rules), rank_(rank), world_(world) {
  order_.resize(tensors.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
  std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return tensors[a].first < tensors[b].first; });
  int64_t end = 0;
  for (size_t i : order_) {
    ST_CHECK(tensors[i].first == end, "the inf/NaN verdict's parameter tensors must tile the gradients: tensor ", i,
             " starts at element ", tensors[i].first, ", the ones before it end at ", end);
    offsets_.push_back(end);
    end += tensors[i].second;
  }
  if (offsets_.empty()) offsets_.push_back(0);  // a model without parameters: one empty tensor
  offsets_.push_back(end);
  layout_ = kernels::VerdictLayout{static_cast<int64_t>(offsets_.size()) - 1};
  state_ = backend.zeros({kernels::kStepStateDoubles + layout_.size()}, DType::f64, "step state");
  verdict_ = state_.view(kernels::kStepStateDoubles, {layout_.size()});
  host_verdict_ = backend.pinned({layout_.size()}, DType::f64, "step verdict (host)");
  verdict_ready_ = backend.make_event("step verdict ready");
  verdict_agreed_ = backend.make_event("step verdict agreed");
}

DeviceStepState::~DeviceStepState() {
  try {
    backend_.compute_stream().synchronize();  // nothing queued may outlive the pinned copies
  } catch (...) {
    // Reported by the call that saw it first.
  }
}

const kernels::StepState* DeviceStepState::device() const {
  return reinterpret_cast<const kernels::StepState*>(state_.device_data<double>());
}

const double* DeviceStepState::loss_scale() const { return &device()->loss_scale; }

const double* DeviceStepState::step() const { return &device()->step; }

const double* DeviceStepState::local_loss_mark() const { return verdict_.device_data<double>() + layout_.loss_mark(); }

void DeviceStepState::push(int64_t step, const optim::LossScaler& scaler, int64_t updates) {
  kernels::StepState s;
  s.step = static_cast<double>(step);
  s.loss_scale = scaler.raw_scale();
  s.clean_steps = static_cast<double>(scaler.clean_steps_in_a_row());
  s.skipped_steps = static_cast<double>(scaler.skipped_steps());
  s.updates = static_cast<double>(updates);
  Tensor host({kernels::kStepStateDoubles}, DType::f64, "step state (host copy)");
  std::memcpy(host.raw(), &s, sizeof s);
  backend_.copy_async(backend_.compute_stream(), state_.view(0, {kernels::kStepStateDoubles}), host);
  backend_.compute_stream().synchronize();  // the host copy goes out of scope
}

void DeviceStepState::pull(optim::LossScaler& scaler, optim::Optimizer& optimizer) {
  const Tensor host = backend_.download(state_.view(0, {kernels::kStepStateDoubles}));
  kernels::StepState s;
  std::memcpy(static_cast<void*>(&s), host.raw(), sizeof s);
  scaler.restore(s.loss_scale, static_cast<int64_t>(s.clean_steps), static_cast<int64_t>(s.skipped_steps));
  optimizer.set_steps_taken(static_cast<int64_t>(s.updates));
}

void DeviceStepState::verdict(const Tensor& grads, const Tensor& row_losses, bool inject_overflow) {
  optim::queue_nonfinite_verdict(backend_, grads, offsets_, &row_losses, static_cast<double>(world_ - rank_), verdict_,
                                 scratch_);
  if (inject_overflow)
    launch(backend_.compute_stream(), "inject_overflow", 1,
           kernels::SetValue<double>{verdict_.device_data<double>() + layout_.injected(), 1.0});
}

void DeviceStepState::agree(comm::Communicator& gradient_comm, comm::Communicator& host_comm) {
  if (world_ == 1) return;
  Stream& s = backend_.compute_stream();
  double* v = verdict_.device_data<double>();
  if (gradient_comm.queues_on_stream()) {
    s.record(*verdict_ready_);
    gradient_comm.queue_allreduce(v, layout_.size(), DType::f64, comm::ReduceOp::max, *verdict_ready_,
                                  *verdict_agreed_);
    s.wait(*verdict_agreed_);
    return;
  }
  // The gradients travel through the host (MPI): so does the verdict.
  backend_.copy_async(s, host_verdict_, verdict_);
  s.synchronize();
  host_comm.allreduce(host_verdict_.data<double>(), layout_.size(), DType::f64, comm::ReduceOp::max);
  backend_.copy_async(s, verdict_, host_verdict_);
}

void DeviceStepState::decide(int64_t step, int64_t epoch) {
  Stream& s = backend_.compute_stream();
  kernels::StepState* state = reinterpret_cast<kernels::StepState*>(state_.device_data<double>());
  launch(s, "decide_step", 1, kernels::DecideStep{state, verdict_.device_data<double>(), layout_, rules_});
  Readback& r = free_readback();
  r.step = step;
  r.epoch = epoch;
  backend_.copy_async(s, r.host, state_);
  s.record(*r.copied);
}

DeviceStepState::Readback& DeviceStepState::free_readback() {
  size_t i = 0;
  while (i < readbacks_.size() && readbacks_[i]->queued) ++i;
  if (i == readbacks_.size()) {
    auto r = std::make_unique<Readback>();
    r->host = backend_.pinned({state_.numel()}, DType::f64, "step state readback " + std::to_string(i));
    r->copied = backend_.make_event("step state readback " + std::to_string(i));
    readbacks_.push_back(std::move(r));
  }
  readbacks_[i]->queued = true;
  queued_.push_back(i);
  return *readbacks_[i];
}

std::vector<StepOutcome> DeviceStepState::completed(bool drain) {
  std::vector<StepOutcome> out;
  while (!queued_.empty()) {
    Readback& r = *readbacks_[queued_.front()];
    if (drain) {
      if (!r.copied->query()) r.copied->synchronize();
    } else if (!r.copied->query()) {
      break;
    }
    StepOutcome o;
    o.step = r.step;
    o.epoch = r.epoch;
    const double* words = r.host.data<double>();
    std::memcpy(static_cast<void*>(&o.state), words, sizeof o.state);
    const double* v = words + kernels::kStepStateDoubles;
    o.tensor_counts.assign(v, v + layout_.tensors);
    o.loss_mark = static_cast<int32_t>(v[layout_.loss_mark()]);
    out.push_back(std::move(o));
    r.queued = false;
    queued_.erase(queued_.begin());
  }
  return out;
}

std::vector<double> DeviceStepState::counts_by_tensor(const StepOutcome& o) const {
  std::vector<double> counts(order_.size());
  for (size_t k = 0; k < order_.size(); ++k) counts[order_[k]] = o.tensor_counts[k];
  return counts;
}

}  // namespace scaletrain::train
