// SGD with momentum, dampening, Nesterov and (coupled, L2) weight decay, as torch.optim.SGD; tensors
// without weight decay are updated as a param group with weight_decay 0.
#include <utility>

#include "scaletrain/core/error.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(const SgdOptions& o, Backend& backend, std::vector<ParameterTensor> tensors,
      const std::vector<NoDecayCategory>& no_decay)
      : Optimizer(backend), o_(o), ranges_(std::move(tensors), no_decay) {
    ST_CHECK(o.momentum >= 0.0f, "SGD momentum must be >= 0, got ", o.momentum);
    ST_CHECK(o.weight_decay >= 0.0f, "SGD weight decay must be >= 0, got ", o.weight_decay);
    ST_CHECK(!o.nesterov || (o.momentum > 0.0f && o.dampening == 0.0f),
             "Nesterov momentum needs momentum > 0 and zero dampening");
  }
  void step_on_device(Tensor& params, const Tensor& grads, const kernels::StepState* state, bool unscale,
                      const Tensor* compute) override {
    ST_CHECK(params.dtype() == DType::f32 && grads.dtype() == DType::f32, "SGD updates f32 parameters");
    ST_CHECK(params.numel() == grads.numel(), "SGD: ", params.numel(), " parameters but ", grads.numel(),
             " gradients");
    const std::vector<UpdateRange>& ranges = ranges_.of(params.numel());
    // Written before it is read (first_step), so it needs no zeroing.
    if (o_.momentum != 0.0f && buffer_.numel() != params.numel())
      buffer_ = backend_.empty({params.numel()}, DType::f32, "sgd.momentum");
    float* momentum = o_.momentum != 0.0f ? buffer_.device_data<float>() : nullptr;
    launch_update("sgd_update",
                  kernels::SgdUpdate{params.device_data<float>(), grads.device_data<float>(), momentum, 0.0f,
                                     o_.momentum, o_.dampening, o_.weight_decay, o_.nesterov, false},
                  params.numel(), ranges, o_.weight_decay, state, unscale, compute);
  }
  std::string name() const override { return "sgd"; }
  // Before the first applied update (its buffer may be allocated for a skipped step) there is none.
  std::vector<const Tensor*> state() const override {
    if (buffer_.numel() == 0 || steps_ == 0) return {};
    return {&buffer_};
  }
  std::vector<std::string> state_names() const override {
    if (o_.momentum == 0.0f) return {};
    return {"momentum_buffer"};
  }
  void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) override {
    ST_CHECK(steps >= 0, "SGD restore: negative step count ", steps);
    const size_t want = steps > 0 ? state_names().size() : 0;
    ST_CHECK(state.size() == want, "SGD (momentum ", o_.momentum, ") after ", steps, " steps has ", want,
             " state buffers; the checkpoint holds ", state.size());
    steps_ = steps;
    if (want == 0) return;
    buffer_ = restore_buffer(backend_, state[0], numel, "sgd.momentum");
  }

 private:
  SgdOptions o_;
  UpdateRanges ranges_;
  Tensor buffer_;
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(const SgdOptions& options, Backend& backend, std::vector<ParameterTensor> tensors,
                                    const std::vector<NoDecayCategory>& no_decay) {
  return std::make_unique<Sgd>(options, backend, std::move(tensors), no_decay);
}

}  // namespace scaletrain::optim
