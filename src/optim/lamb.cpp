// LAMB (You et al. 2019, Algorithm 2, with bias correction): m, v as Adam's; per tensor the
// direction u = m^ / (sqrt(v^) + eps) + wd w and w -= lr x ||w|| / ||u|| x u. Biases and normalization
// parameters (exclude_bias_norm) take u without weight decay and no trust ratio. Three passes: the
// moments, the per-tensor squared sums of w and u, then one update launch over every tensor.
#include <type_traits>
#include <utility>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/trust_ratio_update.hpp"
#include "scaletrain/optim/optimizer.hpp"
#include "scaletrain/optim/tensor_norms.hpp"

namespace scaletrain::optim {
namespace {

class Lamb final : public Optimizer {
 public:
  Lamb(const LambOptions& o, Backend& backend, std::vector<ParameterTensor> tensors,
       const std::vector<NoDecayCategory>& no_decay)
      : Optimizer(backend), o_(o), norms_(backend, std::move(tensors), o.exclude_bias_norm, no_decay) {
    ST_CHECK(o.beta1 >= 0.0f && o.beta1 < 1.0f, "LAMB beta1 must be in [0, 1), got ", o.beta1);
    ST_CHECK(o.beta2 >= 0.0f && o.beta2 < 1.0f, "LAMB beta2 must be in [0, 1), got ", o.beta2);
    ST_CHECK(o.eps > 0.0f, "LAMB eps must be > 0, got ", o.eps);
    ST_CHECK(o.weight_decay >= 0.0f, "LAMB weight decay must be >= 0, got ", o.weight_decay);
  }
  void step_on_device(Tensor& params, const Tensor& grads, const kernels::StepState* state, bool unscale,
                      const Tensor* compute) override {
    ST_CHECK(params.dtype() == DType::f32 && grads.dtype() == DType::f32, "LAMB updates f32 parameters");
    ST_CHECK(params.numel() == grads.numel(), "LAMB: ", params.numel(), " parameters but ", grads.numel(),
             " gradients");
    const int64_t n = params.numel();
    if (m_.numel() != n) {
      m_ = backend_.zeros({n}, DType::f32, "lamb.m");
      v_ = backend_.zeros({n}, DType::f32, "lamb.v");
    }
    norms_.prepare(n);
    float* p = params.device_data<float>();
    float *m = m_.device_data<float>(), *v = v_.device_data<float>();
    launch(backend_.compute_stream(), "lamb_moments", n,
           kernels::LambMoments{grads.device_data<float>(), m, v, state, o_.beta1, o_.beta2, unscale});
    const kernels::LambDirection direction{p, m, v, state, o_.eps};
    norms_.queue("lamb_norms", n, kernels::LambSquares{direction, norms_.table(), o_.weight_decay});
    const auto update = [&](auto* out) {
      using C = std::remove_pointer_t<decltype(out)>;
      launch(backend_.compute_stream(), "lamb_update", n,
             kernels::LambUpdate<C>{p, direction, norms_.squares(), norms_.table(), o_.weight_decay, out});
    };
    dispatch_compute(compute, n, update);
  }
  std::pair<float, float> bias_correction_betas() const override { return {o_.beta1, o_.beta2}; }
  std::string name() const override { return "lamb"; }
  std::vector<const Tensor*> state() const override {
    if (m_.numel() == 0 || steps_ == 0) return {};
    return {&m_, &v_};
  }
  std::vector<std::string> state_names() const override { return {"lamb_exp_avg", "lamb_exp_avg_sq"}; }
  void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) override {
    ST_CHECK(steps >= 0, "LAMB restore: negative step count ", steps);
    const size_t want = steps > 0 ? 2 : 0;
    ST_CHECK(state.size() == want, "LAMB after ", steps, " steps has ", want, " state buffers; the checkpoint holds ",
             state.size());
    steps_ = steps;
    if (want == 0) return;
    m_ = restore_buffer(backend_, state[0], numel, "lamb.m");
    v_ = restore_buffer(backend_, state[1], numel, "lamb.v");
  }

 private:
  LambOptions o_;
  TensorNorms norms_;
  Tensor m_, v_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(const LambOptions& options, Backend& backend, std::vector<ParameterTensor> tensors,
                                     const std::vector<NoDecayCategory>& no_decay) {
  return std::make_unique<Lamb>(options, backend, std::move(tensors), no_decay);
}

}  // namespace scaletrain::optim
