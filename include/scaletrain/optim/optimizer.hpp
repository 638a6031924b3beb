// Optimizers over one flat parameter buffer and its flat gradient buffer (the layout the
// gradient buckets all-reduce). Semantics match torch.optim.SGD and torch.optim.AdamW exactly;
// the per-element updates are the kernels/optimizer_update.hpp functors, launched on the backend's
// compute stream; the state buffers live on the backend's device.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of `params` (f32) from `grads` (f32, same length) at learning rate `lr`.
  virtual void step(Tensor& params, const Tensor& grads, float lr) = 0;
  virtual std::string name() const = 0;
  // The optimizer's state buffers (momentum, moments), for checkpoints and tests.
  virtual std::vector<const Tensor*> state() const = 0;
  // torch.optim's names of the buffers state() returns: "momentum_buffer"; "exp_avg", "exp_avg_sq".
  virtual std::vector<std::string> state_names() const = 0;
  virtual int64_t steps_taken() const = 0;
  // Continues from a checkpoint: `steps` updates taken and the state buffers (host, in
  // state_names() order, `numel` floats each; none when steps is 0). Queued on the compute stream;
  // returns once the buffers are on the device. Error naming what does not fit.
  virtual void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) = 0;
};

enum class OptimizerKind { sgd, adamw };
OptimizerKind parse_optimizer_kind(const std::string& name);  // "sgd" | "adamw"; Error otherwise
std::string optimizer_kind_name(OptimizerKind k);

struct SgdOptions {
  float momentum = 0.9f;
  float dampening = 0.0f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};

struct AdamWOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

// A device f32 buffer holding `values` (numel of them), for Optimizer::restore.
Tensor restore_buffer(Backend& backend, const std::vector<float>& values, int64_t numel, const std::string& name);

// Throws Error on invalid options (negative momentum, Nesterov without momentum, betas outside [0,1)).
std::unique_ptr<Optimizer> make_sgd(const SgdOptions& options, Backend& backend);
std::unique_ptr<Optimizer> make_adamw(const AdamWOptions& options, Backend& backend);

}  // namespace scaletrain::optim
