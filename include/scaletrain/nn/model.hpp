// Model: the layer graph (a chain executed in topological order, backward in reverse), the flat
// parameter and gradient buffers every layer's parameters are views of (laid out in reverse layer
// order, the order backward finishes them, so gradient buckets are contiguous), initialization and
// the Keras-style summary. configure() lays the flat buffers out in host memory; build() moves them
// to the backend's device when its memory is not the host's.
// Mixed precision: build() takes the compute type. In bf16 or f16 the model keeps a flat copy of
// the parameters in that type (what the layers' ops read), refreshed from the f32 master weights by
// refresh_compute_parameters() after every update; the input must be in the compute type, the
// logits come out in f32 and backward takes f32 gradients of the logits.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

// Where one parameter lives in the flat buffers.
struct ParameterSlot {
  size_t layer = 0;
  size_t index = 0;  // within the layer's parameters()
  int64_t offset = 0;
  int64_t count = 0;
};

class Model {
 public:
  explicit Model(std::string name) : name_(std::move(name)) {}
  const std::string& name() const { return name_; }

  // Adds a layer; an empty name gets a Keras-style one ("conv2d", "conv2d_1", ...).
  Layer& add(LayerPtr layer);
  template <class L, class... Args>
  L& emplace(Args&&... args) {
    return static_cast<L&>(add(std::make_unique<L>(std::forward<Args>(args)...)));
  }

  // Checks the chain for the per-sample input shape, lays out and binds the flat buffers.
  void configure(const Shape& input_sample);
  // Creates every layer's ops and buffers for `batch` samples on the backend (the flat buffers move
  // to its device, keeping their values), computing in `compute` (f32, bf16 or f16). A layer then
  // takes over the pooling layer after it where its op can run the pooling inside (cpu: f32
  // SeparableConv2D or Conv2D of one input channel, and bf16 convolutions with an activation, then
  // MaxPool2D; Pool2D::absorbed()); the results are the same.
  void build(Backend& backend, int64_t batch, DType compute = DType::f32);
  DType compute_dtype() const { return compute_; }
  // Queues the rounding of the f32 master weights into the compute-type copy (nothing in f32).
  void refresh_compute_parameters();
  // Deterministic initialization from a seed (identical on every rank). After build() on a device
  // the values are copied there on the compute stream.
  void init_parameters(uint64_t seed);

  const Tensor& forward(const Tensor& x, bool training);
  // Runs backward from the gradient of the logits. After each layer finishes, on_layer_done is
  // called with that layer's index, so the caller can start reducing its gradients.
  void backward(const Tensor& dlogits, const std::function<void(size_t)>& on_layer_done = {});
  // Dropout draws from (seed mixed with the layer's position, step, sample_index[row]).
  void set_random_state(uint64_t seed, uint64_t step, const Tensor& sample_index = Tensor());

  std::vector<LayerPtr>& layers() { return layers_; }
  const std::vector<LayerPtr>& layers() const { return layers_; }
  // Slots in the order of the flat buffers (= reverse layer order = ready order).
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  // The slots of layer i are slots()[first_slot(i)] .. slots()[first_slot(i) + parameters().size()).
  size_t first_slot(size_t layer) const { return first_slot_[layer]; }
  Tensor& flat_parameters() { return flat_params_; }
  Tensor& flat_gradients() { return flat_grads_; }
  const Tensor& flat_parameters() const { return flat_params_; }
  // The parameters in the compute type (flat_parameters() itself in f32).
  const Tensor& flat_compute_parameters() const { return flat_compute_; }

  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return output_shape_; }
  int64_t parameter_count() const { return flat_params_.numel(); }
  int64_t flops_per_sample() const;
  // No gradient flows into the input: the first layer with parameters computes no dx and the layers
  // before it run no backward (layers().size() when no layer has parameters).
  size_t first_layer_with_parameters() const;
  // Forward and backward FLOPs per sample of layer i: 3x its forward (forward, dx, weight gradient),
  // 2x for the first layer with parameters (no dx), 1x before it; and their sum over the model.
  int64_t training_flops_of_layer(size_t i) const;
  int64_t training_flops_per_sample() const;
  int64_t batch() const { return batch_; }

  // Keras' model.summary() with a FLOPs-per-sample column.
  std::string summary() const;
  // One line per layer whose operator the backend names: "conv2d (Conv2D): direct narrow rows, ...".
  // After build.
  std::vector<std::string> implementations() const;

 private:
  std::string name_;
  std::vector<LayerPtr> layers_;
  std::vector<ParameterSlot> slots_;
  std::vector<size_t> first_slot_;
  void bind_flat_buffers();
  void absorb_poolings();

  Tensor flat_params_, flat_grads_;
  Tensor flat_compute_;             // the compute-type copy (= flat_params_ in f32)
  Tensor logits_f32_, dlogits_low_;  // low precision only: f32 logits, compute-type logit gradients
  DType compute_ = DType::f32;
  Backend* backend_ = nullptr;  // set by build()
  Shape input_shape_, output_shape_;
  int64_t batch_ = 0;
  bool configured_ = false;
};

}  // namespace scaletrain::nn
