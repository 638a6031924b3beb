// LARS (You, Gitman and Ginsburg 2017) with momentum as MLPerf's ResNet-50 reference runs it: per
// tensor, local_lr = lr x eta ||w|| / (||g|| + wd ||w||); v = m v + local_lr (g + wd w); w -= v.
// Biases and normalization parameters (exclude_bias_norm) take plain momentum at lr without weight
// decay. Two passes: the per-tensor squared sums of w and g, then one update launch over every tensor.
#include <type_traits>
#include <utility>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/trust_ratio_update.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/optim/tensor_norms.hpp"

namespace scaletrain::optim {
namespace {

class Lars final : public Optimizer {
 public:
  Lars(const LarsOptions& o, Backend& backend, std::vector<ParameterTensor> tensors,
       const std::vector<NoDecayCategory>& no_decay)
      : Optimizer(backend), o_(o), norms_(backend, std::move(tensors), o.exclude_bias_norm, no_decay) {
    ST_CHECK(o.momentum >= 0.0f && o.momentum < 1.0f, "LARS momentum must be in [0, 1), got ", o.momentum);
    ST_CHECK(o.weight_decay >= 0.0f, "LARS weight decay must be >= 0, got ", o.weight_decay);
    ST_CHECK(o.trust_coefficient > 0.0f, "LARS trust coefficient must be > 0, got ", o.trust_coefficient);
  }
  void step_on_device(Tensor& params, const Tensor& grads, const kernels::StepState* state, bool unscale,
                      const Tensor* compute) override {
    ST_CHECK(params.dtype() == DType::f32 && grads.dtype() == DType::f32, "LARS updates f32 parameters");
    ST_CHECK(params.numel() == grads.numel(), "LARS: ", params.numel(), " parameters but ", grads.numel(),
             " gradients");
    const int64_t n = params.numel();
    // Written before it is read (the first update), so it needs no zeroing.
    if (velocity_.numel() != n) velocity_ = backend_.empty({n}, DType::f32, "lars.momentum");
    float* p = params.device_data<float>();
    const float* g = grads.device_data<float>();
    norms_.queue("lars_norms", n, kernels::LarsSquares{p, g, state, unscale});
    const auto update = [&](auto* out) {
      using C = std::remove_pointer_t<decltype(out)>;
      launch(backend_.compute_stream(), "lars_update", n,
             kernels::LarsUpdate<C>{p, g, velocity_.device_data<float>(), norms_.squares(), norms_.table(), state,
                                    o_.momentum, o_.weight_decay, o_.trust_coefficient, unscale, out});
    };
    dispatch_compute(compute, n, update);
  }
  std::string name() const override { return "lars"; }
  std::vector<const Tensor*> state() const override {
    if (velocity_.numel() == 0 || steps_ == 0) return {};
    return {&velocity_};
  }
  std::vector<std::string> state_names() const override { return {"lars_momentum"}; }
  void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) override {
    ST_CHECK(steps >= 0, "LARS restore: negative step count ", steps);
    const size_t want = steps > 0 ? 1 : 0;
    ST_CHECK(state.size() == want, "LARS after ", steps, " steps has ", want, " state buffers; the checkpoint holds ",
             state.size());
    steps_ = steps;
    if (want == 1) velocity_ = restore_buffer(backend_, state[0], numel, "lars.momentum");
  }

 private:
  LarsOptions o_;
  TensorNorms norms_;
  Tensor velocity_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lars(const LarsOptions& options, Backend& backend, std::vector<ParameterTensor> tensors,
                                     const std::vector<NoDecayCategory>& no_decay) {
  return std::make_unique<Lars>(options, backend, std::move(tensors), no_decay);
}

}  // namespace scaletrain::optim
