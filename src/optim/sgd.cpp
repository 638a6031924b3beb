// SGD with momentum, dampening, Nesterov and (coupled, L2) weight decay, as torch.optim.SGD.
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {
namespace {

class Sgd final : public Optimizer {
 public:
  explicit Sgd(const SgdOptions& o) : o_(o) {
    ST_CHECK(o.momentum >= 0.0f, "SGD momentum must be >= 0, got ", o.momentum);
    ST_CHECK(o.weight_decay >= 0.0f, "SGD weight decay must be >= 0, got ", o.weight_decay);
    ST_CHECK(!o.nesterov || (o.momentum > 0.0f && o.dampening == 0.0f),
             "Nesterov momentum needs momentum > 0 and zero dampening");
  }
  void step(Tensor& params, const Tensor& grads, float lr) override {
    ST_CHECK(params.dtype() == DType::f32 && grads.dtype() == DType::f32, "SGD updates f32 parameters");
    ST_CHECK(params.numel() == grads.numel(), "SGD: ", params.numel(), " parameters but ", grads.numel(),
             " gradients");
    if (o_.momentum != 0.0f && buffer_.numel() != params.numel()) buffer_ = Tensor({params.numel()});
    kernels::launch_host("sgd_update", params.numel(),
                         kernels::SgdUpdate{params.data<float>(), grads.data<float>(),
                                            o_.momentum != 0.0f ? buffer_.data<float>() : nullptr, lr, o_.momentum,
                                            o_.dampening, o_.weight_decay, o_.nesterov, steps_ == 0});
    ++steps_;
  }
  std::string name() const override { return "sgd"; }
  std::vector<const Tensor*> state() const override {
    if (buffer_.numel() == 0) return {};
    return {&buffer_};
  }
  int64_t steps_taken() const override { return steps_; }

 private:
  SgdOptions o_;
  Tensor buffer_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(const SgdOptions& options) { return std::make_unique<Sgd>(options); }

}  // namespace scaletrain::optim
