// Optimizers over one flat parameter buffer and its flat gradient buffer (the layout the
// gradient buckets all-reduce), told at construction which parameter tensors the buffer holds so
// that options can differ per tensor (optimizer.no_decay) and LARS and LAMB can take per-tensor
// norms. SGD and AdamW match torch.optim.SGD and torch.optim.AdamW exactly, with one param group per
// set of options (kernels/optimizer_update.hpp, one launch over every range of tensors sharing their
// options); LARS and LAMB follow their papers (kernels/trust_ratio_update.hpp); the state buffers
// live on the backend's device.
// The trainer's update reads its learning rate, skip and bias corrections from the device's step
// state (kernels/step_state.hpp, step_on_device); step(params, grads, lr) writes such a state from
// the host first (tests, tools).
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/step_state.hpp"

namespace scaletrain::optim {

// One parameter tensor inside the flat buffer.
struct ParameterTensor {
  std::string name;    // hierarchical, PyTorch-style: "0.bias", "layer1.0.bn1.weight"
  int64_t offset = 0;  // first element in the flat buffer
  int64_t count = 0;   // elements
  bool norm = false;   // an affine parameter (scale or shift) of a normalization layer
  bool embedding = false;  // a transformer's class token or position embedding
};

// What optimizer.no_decay can exclude from weight decay: tensors whose name's last component is
// "bias", tensors marked norm, and tensors marked embedding (torchvision's recipes give the last
// their own --transformer-embedding-decay, usually 0).
enum class NoDecayCategory { bias, norm, embedding };
// "bias" | "norm" | "embedding"; Error naming optimizer.no_decay and the allowed values otherwise.
NoDecayCategory parse_no_decay_category(const std::string& name);
std::string no_decay_category_name(NoDecayCategory c);
const std::vector<std::string>& no_decay_category_names();  // every category, in enum order

// The options one tensor is updated with.
struct TensorOptions {
  bool weight_decay = true;  // false: the optimizer's weight decay is 0 for this tensor
};
TensorOptions tensor_options(const ParameterTensor& tensor, const std::vector<NoDecayCategory>& no_decay);

// A contiguous range of the flat buffer whose tensors share their options.
struct UpdateRange {
  int64_t offset = 0;
  int64_t count = 0;
  TensorOptions options;
  bool operator==(const UpdateRange& o) const {
    return offset == o.offset && count == o.count && options.weight_decay == o.options.weight_decay;
  }
};

// The ranges an optimizer launches over. Built from the tensors (in any order; in offset order they
// must tile the buffer from element 0 without gaps or overlaps, else Error naming the tensors) and
// optimizer.no_decay, neighbours with equal options merged. No tensors means one tensor over the
// whole buffer with weight decay on, whatever its length.
class UpdateRanges {
 public:
  UpdateRanges(std::vector<ParameterTensor> tensors, const std::vector<NoDecayCategory>& no_decay);
  // The ranges over a buffer of `numel` elements; Error when the tensors cover another length.
  const std::vector<UpdateRange>& of(int64_t numel);
  // The elements the tensors cover (0 when no tensors were given).
  int64_t covered() const { return covered_; }

 private:
  bool whole_buffer_ = false;
  int64_t covered_ = 0;
  std::vector<UpdateRange> ranges_;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of `params` (f32) from `grads` (f32, same length) at learning rate `lr`; the length
  // must be the one the tensors given at construction cover. Uploads the step's state (synchronizes).
  void step(Tensor& params, const Tensor& grads, float lr);
  // The update as the device's step state says (`state` in device memory: skip, lr, the bias
  // corrections, whether it is the first update, the unscaling factor), queued on the compute stream
  // as one launch over every parameter range: the gradients unscaled first where `unscale` (fp16),
  // `compute` (bf16 or f16, the parameters' length; may be null) written from the updated parameters.
  // The host's count of updates is not advanced (set_steps_taken, from the state read back).
  virtual void step_on_device(Tensor& params, const Tensor& grads, const kernels::StepState* state, bool unscale,
                              const Tensor* compute) = 0;
  virtual std::string name() const = 0;
  // AdamW's betas, whose bias corrections the step state computes (0, 0: none).
  virtual std::pair<float, float> bias_correction_betas() const { return {0.0f, 0.0f}; }
  // The optimizer's state buffers (momentum, moments), for checkpoints and tests; none before the
  // first applied update (steps_taken() 0).
  virtual std::vector<const Tensor*> state() const = 0;
  // torch.optim's names of the buffers state() returns: "momentum_buffer"; "exp_avg", "exp_avg_sq".
  virtual std::vector<std::string> state_names() const = 0;
  int64_t steps_taken() const { return steps_; }
  // The updates applied as the device counted them (after step_on_device).
  void set_steps_taken(int64_t steps) { steps_ = steps; }
  // Continues from a checkpoint: `steps` updates taken and the state buffers (host, in
  // state_names() order, `numel` floats each; none when steps is 0). Queued on the compute stream;
  // returns once the buffers are on the device. Error naming what does not fit.
  virtual void restore(int64_t steps, const std::vector<std::vector<float>>& state, int64_t numel) = 0;

 protected:
  explicit Optimizer(Backend& backend) : backend_(backend) {}
  // f(out) with out the compute-type copy's typed pointer (bf16*, f16*), or (float*)nullptr without one.
  template <class F>
  static void dispatch_compute(const Tensor* compute, int64_t n, const F& f) {
    if (!compute) return f(static_cast<float*>(nullptr));
    ST_CHECK(compute->numel() == n, "the compute-type copy has ", compute->numel(), " elements for ", n, " parameters");
    if (compute->dtype() == DType::bf16) return f(compute->device_data<bf16>());
    ST_CHECK(compute->dtype() == DType::f16, "the compute-type copy must be bf16 or f16, not ", dtype_name(compute->dtype()));
    f(compute->device_data<f16>());
  }
  // Queues `update` (over the whole buffer of n elements) as one MultiTensorUpdate over `ranges`,
  // decayed ranges with `weight_decay` (kernels/optimizer_update.hpp).
  template <class Update>
  void launch_update(const char* label, const Update& update, int64_t n, const std::vector<UpdateRange>& ranges,
                     float weight_decay, const kernels::StepState* state, bool unscale, const Tensor* compute);
  Backend& backend_;
  int64_t steps_ = 0;  // updates applied

 private:
  // The ranges' device table (made again where the ranges change).
  kernels::UpdateRangeTable range_table(const std::vector<UpdateRange>& ranges);
  Tensor host_step_state_;  // step()'s state on the device
  std::vector<UpdateRange> table_of_;  // the ranges the table is for
  Tensor table_ends_, table_decayed_, table_ends_host_, table_decayed_host_;
};

enum class OptimizerKind { sgd, adamw, lars, lamb };
OptimizerKind parse_optimizer_kind(const std::string& name);  // "sgd" | "adamw" | "lars" | "lamb"; Error otherwise
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

// LARS: momentum as MLPerf's ResNet-50 reference (v = m v + local_lr (g + wd w)), trust coefficient
// eta; exclude_bias_norm: biases and normalization parameters take neither trust ratio nor decay.
struct LarsOptions {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float trust_coefficient = 0.001f;
  bool exclude_bias_norm = true;
};

// LAMB with bias correction; exclude_bias_norm as LARS'.
struct LambOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-6f;
  float weight_decay = 0.01f;
  bool exclude_bias_norm = true;
};

// A device f32 buffer holding `values` (numel of them), for Optimizer::restore.
Tensor restore_buffer(Backend& backend, const std::vector<float>& values, int64_t numel, const std::string& name);

// Throws Error on invalid options (negative momentum, Nesterov without momentum, betas outside [0,1)),
// and on tensors that do not tile the buffer (UpdateRanges). `tensors` empty: one tensor over the
// whole buffer, with weight decay; `no_decay` then needs tensors to apply to.
std::unique_ptr<Optimizer> make_sgd(const SgdOptions& options, Backend& backend,
                                    std::vector<ParameterTensor> tensors = {},
                                    const std::vector<NoDecayCategory>& no_decay = {});
std::unique_ptr<Optimizer> make_adamw(const AdamWOptions& options, Backend& backend,
                                      std::vector<ParameterTensor> tensors = {},
                                      const std::vector<NoDecayCategory>& no_decay = {});

std::unique_ptr<Optimizer> make_lars(const LarsOptions& options, Backend& backend,
                                     std::vector<ParameterTensor> tensors = {},
                                     const std::vector<NoDecayCategory>& no_decay = {});
std::unique_ptr<Optimizer> make_lamb(const LambOptions& options, Backend& backend,
                                     std::vector<ParameterTensor> tensors = {},
                                     const std::vector<NoDecayCategory>& no_decay = {});

}  // namespace scaletrain::optim
