// Layer: what one node of a model computes. A layer is configured with its per-sample input shape
// (declaring its parameters and buffers and checking the shape), its parameters are bound to storage the Model owns (flat
// buffers, so gradient buckets need no copy), then built for a batch size on a backend (ops and
// device buffers created once), and then runs forward and backward any number of times. All of its
// work is queued on the backend's compute stream; a layer never touches device memory itself.
// Mixed precision: activations and the weights the ops read are in the compute type (f32, bf16,
// f16); master weights, biases and all parameter gradients are f32.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::nn {

// Where a parameter lives in the model's PyTorch twin (nn/torch_twin.hpp): the module, counted from
// the layer's first, and the parameter's name in that module.
struct TorchParameterPlace {
  int module_offset = 0;
  std::string name;
};

// How a parameter's initial values are drawn. he_normal_fan_out: normal with std sqrt(2 / fan_out)
// (torch.nn.init.kaiming_normal_(mode='fan_out', nonlinearity='relu'), torchvision's ResNet convolutions);
// normal_001: normal with std 0.01 (torchvision's VGG and MobileNetV2 classifiers); normal_002: std 0.02
// (torchvision's ViT position embedding).
enum class Init {
  zeros,
  ones,
  glorot_uniform,
  lecun_normal,
  he_uniform,
  he_normal_fan_out,
  normal_001,
  normal_002,
  pytorch_default
};

struct Parameter {
  std::string name;  // "weight", "bias", "depthwise_weight", ...
  Shape shape;       // PyTorch layout
  Init init = Init::zeros;
  int64_t fan_in = 0, fan_out = 0;
  Tensor value;          // bound by the Model: f32 master weights, a view into its flat parameter buffer
  Tensor grad;           // bound by the Model: f32, a view into its flat gradient buffer
  Tensor compute_value;  // bound by the Model: the weights in the compute type (value itself in f32)
  // The layout the layer's op reads the weights in, set at build (a convolution's filters: OHWI where
  // its op takes them so), and what the op reads, bound by the Model after build: compute_value, or
  // the Model's copy in op_layout (nn/laid_out_parameters.hpp), written after every update.
  FilterLayout op_layout = FilterLayout::oihw;
  Tensor op_value;
  bool norm = false;     // a normalization layer's affine parameter (optimizer.no_decay = norm)
  bool embedding = false;  // a transformer's class token or position embedding (optimizer.no_decay = embedding)
};

// Model state that is not trained: never all-reduced as a gradient, never touched by the optimizer,
// saved in checkpoints by name (BatchNorm's running statistics). f32 or i64.
struct Buffer {
  std::string name;  // "running_mean", ...
  Shape shape;
  DType dtype = DType::f32;
  double initial = 0;  // every element's value before training
  Tensor value;        // bound by the Model: a view into its flat buffer of that type
};

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // Keras-style class name for the summary: "Conv2D", "SeparableConv2D", ...
  virtual std::string type() const = 0;

  // Checks the per-sample input shape (no batch dimension; images are [H, W, C]), declares the
  // parameters and returns the per-sample output shape. Throws Error naming the layer on mismatch.
  virtual Shape configure(const Shape& in) = 0;
  // Creates ops and activation buffers for `batch` samples. Parameters are bound before this.
  virtual void build(Backend& backend, int64_t batch) = 0;
  // y = f(x). x is [batch, in...]; the returned tensor is owned by the layer.
  virtual const Tensor& forward(const Tensor& x, bool training) = 0;
  // Given dy, writes (overwrites) parameter gradients and returns dx unless !need_dx, in which
  // case the returned tensor is undefined. forward(x, true) must have run with the same x.
  virtual const Tensor& backward(const Tensor& dy, bool need_dx) = 0;

  // A node's inputs, in the order it consumes them. Layers of one input (all but MergeLayer's) take
  // them through configure, forward and backward above. backward_inputs sets dx[k] for every input
  // k with need_dx[k] (the others are left alone); the layer overwrites its dx buffers, and the
  // Model sums the gradients of a tensor consumed by several nodes.
  virtual bool accepts_inputs(size_t count) const { return count == 1; }
  virtual Shape configure_inputs(const std::vector<Shape>& in) { return configure(in.at(0)); }
  virtual const Tensor& forward_inputs(const std::vector<const Tensor*>& x, bool training) {
    return forward(*x.at(0), training);
  }
  virtual void backward_inputs(const Tensor& dy, const std::vector<bool>& need_dx, std::vector<const Tensor*>& dx) {
    dx.at(0) = &backward(dy, need_dx.at(0));
  }

  // Forward floating-point operations per sample (a multiply-add counts 2).
  virtual int64_t flops_per_sample() const { return 0; }
  // What runs the layer's operator on its backend, as the backend names it (the CPU backend's chosen
  // candidate); empty for layers without one, or where the backend does not say. After build.
  virtual std::string implementation() const { return {}; }
  // Sets the seed of any randomness (dropout), the step number it reads on the device (an f64 in
  // device memory, the trainer's step state; null: step 0) and the data-set index of each row of the
  // batch (a device i64 [batch] tensor; undefined: the row number), so that a sample's random draws
  // do not depend on the rank or row it lands in (nn/random_keys.hpp).
  virtual void set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) {}

  // The PyTorch twin of a model is an nn.Sequential with one module per operation; an activation a
  // layer fuses is a module of its own. How many modules this layer stands for, and where each of
  // its parameters lives among them (default: one module, the parameter's own name).
  virtual int torch_module_count() const { return 1; }
  virtual TorchParameterPlace torch_place(size_t parameter) const { return {0, params_.at(parameter).name}; }
  // Under node naming, what its parameters' and buffers' names start with: the node's name. A layer
  // whose parameter is an attribute of a module rather than a submodule's (the ViT's class_token,
  // encoder.pos_embedding) returns that module's name, which may be empty.
  virtual std::string parameter_scope() const { return name_; }

  // Called by Model::build before build(): the backend whose memory and compute stream it uses,
  // and the compute type of its activations, their gradients and the weights its ops read.
  void attach(Backend& backend, DType compute = DType::f32) {
    backend_ = &backend;
    dtype_ = compute;
  }
  DType compute_dtype() const { return dtype_; }

  std::vector<Parameter>& parameters() { return params_; }
  const std::vector<Parameter>& parameters() const { return params_; }
  std::vector<Buffer>& buffers() { return buffers_; }
  const std::vector<Buffer>& buffers() const { return buffers_; }
  int64_t parameter_count() const;
  const Shape& input_shape() const { return in_shape_; }
  const Shape& output_shape() const { return out_shape_; }

 protected:
  Parameter& declare(std::string name, Shape shape, Init init, int64_t fan_in, int64_t fan_out);
  Buffer& declare_buffer(std::string name, Shape shape, DType dtype, double initial);
  // Layer-named shape error.
  [[noreturn]] void shape_error(const std::string& what) const;
  // A device buffer named "<layer>.<what>" (activations: in the compute type), and the stream the
  // layer's work goes to.
  Tensor buffer(const Shape& shape, const std::string& what) { return buffer(shape, what, dtype_); }
  Tensor buffer(const Shape& shape, const std::string& what, DType dtype);
  Stream& stream() { return backend_->compute_stream(); }

  Backend* backend_ = nullptr;
  DType dtype_ = DType::f32;

  std::string name_;
  std::vector<Parameter> params_;
  std::vector<Buffer> buffers_;
  Shape in_shape_, out_shape_;
};

using LayerPtr = std::unique_ptr<Layer>;

// The undefined tensor backward returns when need_dx is false.
const Tensor& no_gradient();

// A batch of `batch` samples of shape `sample`: [batch, sample...].
Shape with_batch(int64_t batch, const Shape& sample);

}  // namespace scaletrain::nn
