// AdamW (decoupled weight decay, bias-corrected moments), as torch.optim.AdamW with amsgrad off;
// tensors without weight decay are updated as a param group with weight_decay 0.
#include <utility>

#include "scaletrain/core/error.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {
namespace {

class AdamW final : public Optimizer {
 public:
  AdamW(const AdamWOptions& o, Backend& backend, std::vector<ParameterTensor> tensors,
        const std::vector<NoDecayCategory>& no_decay)
      : Optimizer(backend), o_(o), ranges_(std::move(tensors), no_decay) {
    ST_CHECK(o.beta1 >= 0.0f && o.beta1 < 1.0f, "AdamW beta1 must be in [0, 1), got ", o.beta1);
    ST_CHECK(o.beta2 >= 0.0f && o.beta2 < 1.0f, "AdamW beta2 must be in [0, 1), got ", o.beta2);
    ST_CHECK(o.eps > 0.0f, "AdamW eps must be > 0, got ", o.eps);
    ST_CHECK(o.weight_decay >= 0.0f, "AdamW weight decay must be >= 0, got ", o.weight_decay);
  }
  void step_on_device(Tensor& params, const Tensor& grads, const kernels::StepState* state, bool unscale,
                      const Tensor* compute) override {
    ST_CHECK(params.dtype() == DType::f32 && grads.dtype() == DType::f32, "AdamW updates f32 parameters");
    ST_CHECK(params.numel() == grads.numel(), "AdamW: ", params.numel(), " parameters but ", grads.numel(),
             " gradients");
    const std::vector<UpdateRange>& ranges = ranges_.of(params.numel());
    if (m_.numel() != params.numel()) {
      m_ = backend_.zeros({params.numel()}, DType::f32, "adamw.m");
      v_ = backend_.zeros({params.numel()}, DType::f32, "adamw.v");
    }
    launch_update("adamw_update",
                  kernels::AdamWUpdate{params.device_data<float>(), grads.device_data<float>(), m_.device_data<float>(),
                                       v_.device_data<float>(), 0.0f, o_.beta1, o_.beta2, o_.eps, o_.weight_decay,
                                       1.0f, 1.0f},
                  params.numel(), ranges, o_.weight_decay, state, unscale, compute);
  }
  std::pair<float, float> bias_correction_betas() const override { return {o_.beta1, o_.beta2}; }
  std::string name() const override { return "adamw"; }
  // Before the first applied update (the moments may be allocated for a skipped step) there is none.
  std::vector<const Tensor*> state() const override {
    if (m_.numel() == 0 || steps_ == 0) return {};
    return {&m_, &v_};
  }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) override {
    ST_CHECK(steps >= 0, "AdamW restore: negative step count ", steps);
    const size_t want = steps > 0 ? 2 : 0;
    ST_CHECK(state.size() == want, "AdamW after ", steps, " steps has ", want, " state buffers; the checkpoint holds ",
             state.size());
    steps_ = steps;
    if (want == 0) return;
    m_ = restore_buffer(backend_, state[0], numel, "adamw.m");
    v_ = restore_buffer(backend_, state[1], numel, "adamw.v");
  }

 private:
  AdamWOptions o_;
  UpdateRanges ranges_;
  Tensor m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adamw(const AdamWOptions& options, Backend& backend,
                                      std::vector<ParameterTensor> tensors,
                                      const std::vector<NoDecayCategory>& no_decay) {
  return std::make_unique<AdamW>(options, backend, std::move(tensors), no_decay);
}

}  // namespace scaletrain::optim
