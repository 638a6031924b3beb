// Model: a graph of layers (nn/graph.hpp orders it), run forward in its execution order and backward
// in reverse; the flat parameter and gradient buffers every parameter is a view of (laid out in
// reverse execution order, the order backward finishes them, so gradient buckets are contiguous)
// and the flat buffers of the model's buffers; initialization and the Keras-style summary.
// configure() checks the graph and lays the flat buffers out in host memory; build() moves them to
// the backend's device when its memory is not the host's.
// Building: emplace<L>(args...) appends a layer consuming the last node (a chain, as Keras'
// Sequential); node<L>({inputs}, name, args...) adds one consuming the named outputs (as Keras'
// functional API), and returns its name for the next call. Names may refer to nodes declared later.
// Gradients: every layer overwrites its dx; where a tensor is consumed by several nodes, the Model
// sums their gradients into a buffer it owns for that tensor. Only nodes downstream of a parameter
// run backward, and a node computes dx only for inputs that lead back to one.
// Auxiliary outputs (Inception-v3's auxiliary classifier): nodes whose outputs are logits beside the
// model's, with a weight for their loss in training. Only training computes them: evaluation skips
// every node that does not lead to the model's output.
// Mixed precision: build() takes the compute type. In bf16 or f16 the model keeps a flat copy of
// the parameters in that type (what the layers' ops read), refreshed from the f32 master weights by
// refresh_compute_parameters() after every update; the input must be in the compute type, the
// logits come out in f32 and backward takes f32 gradients of the logits.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "scaletrain/nn/graph.hpp"
#include "scaletrain/nn/laid_out_parameters.hpp"
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

// A node whose output is logits beside the model's, its loss counted `weight` times in training.
struct AuxiliaryOutput {
  std::string node;
  float weight = 0;
};

// Where one parameter lives in the flat buffers, and its full name ("3.weight", "layer1.0.conv1.weight").
struct ParameterSlot {
  size_t layer = 0;  // the node's position in layers() (execution order)
  size_t index = 0;  // within the layer's parameters()
  int64_t offset = 0;
  int64_t count = 0;
  std::string name;
};

// Where one buffer lives: in the flat buffer of its dtype (f32 or i64).
struct BufferSlot {
  size_t layer = 0;
  size_t index = 0;  // within the layer's buffers()
  DType dtype = DType::f32;
  int64_t offset = 0;
  int64_t count = 0;
  std::string name;
};

// How parameters and buffers are named: after the PyTorch twin's nn.Sequential (module counts:
// "0.weight"; the chains of the zoo) or after the node's name ("layer1.0.conv1.weight").
enum class ParameterNaming { sequential, node };

// Told when each layer's forward or backward starts and ends (the layer profile, train/layer_profile.hpp).
class LayerObserver {
 public:
  virtual ~LayerObserver() = default;
  virtual void layer_begin(size_t layer, bool backward) = 0;
  virtual void layer_end(size_t layer, bool backward) = 0;
};

class Model {
 public:
  explicit Model(std::string name, ParameterNaming naming = ParameterNaming::sequential)
      : name_(std::move(name)), naming_(naming) {}
  const std::string& name() const { return name_; }
  ParameterNaming naming() const { return naming_; }

  // The model input's name, for node().
  static std::string input() { return "input"; }
  // Adds a layer consuming `inputs` (node names or input()); an empty layer name gets a Keras-style
  // one ("conv2d", "conv2d_1", ...). Returns the node's name.
  std::string add(LayerPtr layer, std::vector<std::string> inputs);
  // Adds a layer consuming the last node added (the model input for the first).
  Layer& add(LayerPtr layer);
  template <class L, class... Args>
  L& emplace(Args&&... args) {
    return static_cast<L&>(add(std::make_unique<L>(std::forward<Args>(args)...)));
  }
  template <class L, class... Args>
  std::string node(std::vector<std::string> inputs, Args&&... args) {
    return add(std::make_unique<L>(std::forward<Args>(args)...), std::move(inputs));
  }
  // The node whose output is the model's (default: the last one added).
  void set_output(std::string node) { output_ = std::move(node); }
  // Before configure(): `node`'s output is logits too, computed in training only, its loss weighted.
  void add_auxiliary_output(std::string node, float weight);
  const std::vector<AuxiliaryOutput>& auxiliary_outputs() const { return auxiliary_; }
  // The last training forward's logits of auxiliary output k (f32, as the model's).
  const Tensor& auxiliary_logits(size_t k) const;
  // Marks the model as built for evaluation only (an input too small for an auxiliary head's
  // layers, which stand in place, untrained); a training forward is then a UserError saying `why`.
  void set_evaluation_only(std::string why) { evaluation_only_ = std::move(why); }
  const std::string& evaluation_only() const { return evaluation_only_; }
  // Whether layer i runs only in training (it leads to auxiliary outputs only). After configure().
  bool training_only(size_t layer) const { return training_only_.at(layer); }

  // Checks the graph and the shapes for the per-sample input shape, lays out and binds the flat buffers.
  void configure(const Shape& input_sample);
  // Creates every layer's ops and buffers for `batch` samples on the backend (the flat buffers move
  // to its device, keeping their values), computing in `compute` (f32, bf16 or f16). A layer then
  // takes over the pooling layer consuming its output where it is that output's one consumer and
  // its op can run the pooling inside (cpu: f32 SeparableConv2D or Conv2D of one input channel, and
  // bf16 convolutions with an activation, then MaxPool2D; Pool2D::absorbed()); the results are the same.
  // A BatchNorm2d that alone takes a Conv2D's output (the convolution without an activation) is
  // folded into it for evaluation (Conv2D::fold_batch_norm): the same function, rounded differently.
  void build(Backend& backend, int64_t batch, DType compute = DType::f32);
  // Before build(): whether evaluation folds BatchNorm into the convolutions (default true; false
  // runs every layer as declared, for comparisons).
  void set_batch_norm_folding(bool on) { fold_batch_norms_ = on; }
  // Whether build fuses the residual blocks' BatchNorm -> Add -> ReLU tails into one pass each way
  // (the default; off: the three layers run apart).
  void set_residual_fusion(bool on) { fuse_residual_tails_ = on; }
  DType compute_dtype() const { return compute_; }
  // Queues the rounding of the f32 master weights into the compute-type copy (nothing in f32) and
  // the copies in the ops' layouts (refresh_laid_out_parameters): after any change of the weights.
  void refresh_compute_parameters();
  // Queues the copies of the weights in their ops' own layouts (a convolution's filters in OHWI where
  // its op reads them so; one launch, nothing where no op does), from the f32 master weights: after an
  // update that wrote the compute-type copy itself.
  void refresh_laid_out_parameters();
  // The elements of those copies (0: every op reads the compute-type copy).
  int64_t laid_out_elements() const { return laid_out_.elements(); }
  // Deterministic initialization from a seed (identical on every rank), buffers to their initial
  // values. After build() on a device the values are copied there on the compute stream.
  void init_parameters(uint64_t seed);

  const Tensor& forward(const Tensor& x, bool training);
  // Training forwards and backwards tell `observer` (null: none) about each layer.
  void observe_layers(LayerObserver* observer) { observer_ = observer; }
  // Runs backward from the gradient of the logits, and of each auxiliary output's logits (f32, one per
  // auxiliary output, in their order). After each node finishes (in reverse execution order, including
  // nodes that run no backward), on_layer_done is called with its position in layers(), so the caller
  // can start reducing its gradients.
  void backward(const Tensor& dlogits, const std::function<void(size_t)>& on_layer_done = {},
                const std::vector<const Tensor*>& auxiliary_dlogits = {});
  // Dropout draws from (seed mixed with the layer's position, step, sample_index[row]).
  void set_random_state(uint64_t seed, const double* step, const Tensor& sample_index = Tensor());

  // The layers in execution order (after configure(); before it, in declaration order).
  std::vector<LayerPtr>& layers() { return layers_; }
  const std::vector<LayerPtr>& layers() const { return layers_; }
  // The positions in layers() producing layer i's inputs (kModelInput: the model input), and
  // consuming its output. After configure().
  const std::vector<int>& producers(size_t layer) const { return graph_.producers.at(layer); }
  const std::vector<size_t>& consumers(size_t layer) const { return graph_.consumers.at(layer); }
  // Slots in the order of the flat buffers (= reverse execution order = ready order).
  const std::vector<ParameterSlot>& slots() const { return slots_; }
  // The slots of layer i are slots()[first_slot(i)] .. slots()[first_slot(i) + parameters().size()).
  size_t first_slot(size_t layer) const { return first_slot_[layer]; }
  const std::vector<BufferSlot>& buffer_slots() const { return buffer_slots_; }
  Tensor& flat_parameters() { return flat_params_; }
  Tensor& flat_gradients() { return flat_grads_; }
  const Tensor& flat_parameters() const { return flat_params_; }
  // The flat buffer of the model's f32 or i64 buffers (undefined where it has none of that type).
  Tensor& flat_buffers(DType dtype) { return dtype == DType::i64 ? flat_buffers_i64_ : flat_buffers_f32_; }
  const Tensor& flat_buffers(DType dtype) const { return dtype == DType::i64 ? flat_buffers_i64_ : flat_buffers_f32_; }
  // The parameters in the compute type (flat_parameters() itself in f32).
  const Tensor& flat_compute_parameters() const { return flat_compute_; }

  const Shape& input_shape() const { return input_shape_; }
  const Shape& output_shape() const { return output_shape_; }
  int64_t parameter_count() const { return flat_params_.numel(); }
  int64_t flops_per_sample() const;
  // Whether layer i runs backward (it has parameters or an input leading back to one), and whether it
  // computes the gradient of its input k. No gradient flows into the model input.
  bool runs_backward(size_t layer) const { return runs_backward_.at(layer); }
  bool needs_input_gradient(size_t layer, size_t input) const;
  // Forward and backward FLOPs per sample of layer i: 3x its forward (forward, dx, weight gradient),
  // 2x where it computes no dx, 1x where it runs no backward; and their sum over the model.
  int64_t training_flops_of_layer(size_t i) const;
  int64_t training_flops_per_sample() const;
  int64_t batch() const { return batch_; }

  // Keras' model.summary() with a FLOPs-per-sample column and, for graphs, Keras' "Connected to".
  std::string summary() const;
  // One line per layer whose operator the backend names: "conv2d (Conv2D): direct narrow rows, ...".
  // After build.
  std::vector<std::string> implementations() const;
  // Whether each node consumes the one before it (the model input for the first).
  bool is_chain() const;

 private:
  LayerObserver* observer_ = nullptr;
  std::string connected_to(size_t layer) const;
  std::string name_;
  ParameterNaming naming_;
  std::vector<LayerPtr> layers_;
  std::vector<std::vector<std::string>> inputs_;  // per layer, as declared (reordered by configure)
  std::string output_;
  std::vector<AuxiliaryOutput> auxiliary_;
  std::vector<size_t> auxiliary_positions_;  // per auxiliary output: its node's position
  std::vector<bool> training_only_;          // per layer: leads to auxiliary outputs only
  std::string evaluation_only_;
  GraphOrder graph_;
  std::vector<bool> runs_backward_, output_needs_gradient_;
  std::vector<ParameterSlot> slots_;
  std::vector<size_t> first_slot_;
  std::vector<BufferSlot> buffer_slots_;

  void order_layers();
  Shape configure_layers(const Shape& input_sample);
  void mark_gradient_flow();
  void lay_out_parameters();
  void lay_out_buffers();
  void bind_flat_buffers();
  std::vector<std::string> parameter_names(size_t layer) const;
  void init_buffers();
  void absorb_poolings();
  void fold_batch_norms();
  void fuse_residual_tails();
  void build_gradient_sums();
  const Tensor& input_of(const Tensor& x, int producer) const;
  void add_gradient(int producer, const Tensor& dx);

  Tensor flat_params_, flat_grads_;
  Tensor flat_buffers_f32_, flat_buffers_i64_;
  Tensor flat_compute_;             // the compute-type copy (= flat_params_ in f32)
  LaidOutParameters laid_out_;      // the copies in the ops' own layouts
  void bind_laid_out_parameters();
  Tensor logits_f32_, dlogits_low_;  // low precision only: f32 logits, compute-type logit gradients
  std::vector<Tensor> auxiliary_f32_, auxiliary_dlogits_low_;  // the same per auxiliary output
  void mark_training_only();
  const Tensor* seed_gradient(const Tensor& dlogits, Tensor& low, const char* what);
  // Per layer: its last output, the gradient of that output so far, and the sum buffer where the
  // output reaches backward along several edges (undefined otherwise).
  std::vector<const Tensor*> outputs_, output_grads_;
  std::vector<Tensor> gradient_sums_;
  DType compute_ = DType::f32;
  Backend* backend_ = nullptr;  // set by build()
  Shape input_shape_, output_shape_;
  int64_t batch_ = 0;
  bool configured_ = false;
  bool fold_batch_norms_ = true;
  bool fuse_residual_tails_ = true;
};

}  // namespace scaletrain::nn
