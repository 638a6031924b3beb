// Model: declaring, checking and ordering the graph, laying out and binding the flat buffers,
// building, forward in execution order and backward in reverse with summed gradients.
#include "scaletrain/nn/model.hpp"

#include <cctype>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/random.hpp"
#include "scaletrain/nn/batch_norm.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/elementwise_layers.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/separable_conv2d.hpp"

namespace scaletrain::nn {
namespace {
// "SeparableConv2D" -> "separable_conv2d", as Keras names layers.
std::string snake_case(const std::string& type) {
  std::string out;
  for (size_t i = 0; i < type.size(); ++i) {
    const char c = type[i];
    const bool upper = std::isupper(static_cast<unsigned char>(c));
    if (upper && i > 0 && std::islower(static_cast<unsigned char>(type[i - 1]))) out += '_';
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

}  // namespace

std::string Model::add(LayerPtr layer, std::vector<std::string> inputs) {
  ST_CHECK(!configured_, "model '", name_, "': layers must be added before configure()");
  if (layer->name().empty()) {
    const std::string base = snake_case(layer->type());
    int used = 0;
    for (const auto& l : layers_)
      if (l->name() == base || l->name().rfind(base + "_", 0) == 0) ++used;
    layer->set_name(used == 0 ? base : base + "_" + std::to_string(used));
  }
  layers_.push_back(std::move(layer));
  inputs_.push_back(std::move(inputs));
  return layers_.back()->name();
}

void Model::add_auxiliary_output(std::string node, float weight) {
  ST_CHECK(!configured_, "model '", name_, "': auxiliary outputs must be added before configure()");
  ST_CHECK(weight > 0.0f, "model '", name_, "': the auxiliary output '", node, "' needs a positive loss weight");
  auxiliary_.push_back(AuxiliaryOutput{std::move(node), weight});
}

const Tensor& Model::auxiliary_logits(size_t k) const {
  ST_CHECK(k < auxiliary_.size(), "model '", name_, "' has ", auxiliary_.size(), " auxiliary outputs, not ", k + 1);
  const size_t at = auxiliary_positions_[k];
  ST_CHECK(outputs_.size() == layers_.size() && outputs_[at], "model '", name_, "': auxiliary output '",
           auxiliary_[k].node, "' is computed by a training forward only");
  return compute_ == DType::f32 ? *outputs_[at] : auxiliary_f32_[k];
}

Layer& Model::add(LayerPtr layer) {
  std::vector<std::string> last{layers_.empty() ? input() : layers_.back()->name()};
  add(std::move(layer), std::move(last));
  return *layers_.back();
}

void Model::configure(const Shape& input_sample) {
  ST_CHECK(!configured_, "model '", name_, "' is configured already");
  order_layers();
  input_shape_ = input_sample;
  output_shape_ = configure_layers(input_sample);
  mark_gradient_flow();
  lay_out_parameters();
  lay_out_buffers();
  bind_flat_buffers();
  configured_ = true;
}

// Puts layers_ (and inputs_) in the graph's execution order.
void Model::order_layers() {
  std::vector<GraphNodeSpec> specs;
  for (size_t i = 0; i < layers_.size(); ++i) specs.push_back(GraphNodeSpec{layers_[i]->name(), inputs_[i]});
  std::vector<std::string> outputs{output_.empty() && !layers_.empty() ? layers_.back()->name() : output_};
  for (const AuxiliaryOutput& a : auxiliary_) outputs.push_back(a.node);
  graph_ = order_graph(name_, specs, input(), outputs);
  std::vector<LayerPtr> layers;
  std::vector<std::vector<std::string>> inputs;
  for (size_t id : graph_.order) {
    layers.push_back(std::move(layers_[id]));
    inputs.push_back(std::move(inputs_[id]));
  }
  layers_ = std::move(layers);
  inputs_ = std::move(inputs);
  auxiliary_positions_.clear();
  for (const AuxiliaryOutput& a : auxiliary_)
    for (size_t i = 0; i < layers_.size(); ++i) {
      if (layers_[i]->name() != a.node) continue;
      ST_USER_CHECK(graph_.consumers[i].empty() && i + 1 != layers_.size(), "model '", name_,
                    "': the auxiliary output '", a.node,
                    "' must be consumed by no node and differ from the model's output");
      auxiliary_positions_.push_back(i);
    }
  mark_training_only();
}

// A layer leads to the model's output (the last) where one of its consumers does.
void Model::mark_training_only() {
  std::vector<bool> leads(layers_.size(), false);
  leads.back() = true;
  for (size_t i = layers_.size() - 1; i-- > 0;)
    for (size_t c : graph_.consumers[i]) leads[i] = leads[i] || leads[c];
  training_only_.assign(layers_.size(), false);
  for (size_t i = 0; i < layers_.size(); ++i) training_only_[i] = !leads[i];
}

// Configures every layer with its inputs' shapes; returns the model output's shape.
Shape Model::configure_layers(const Shape& input_sample) {
  std::vector<Shape> out(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) {
    std::vector<Shape> in;
    for (int p : graph_.producers[i]) in.push_back(p == kModelInput ? input_sample : out[static_cast<size_t>(p)]);
    Layer& l = *layers_[i];
    ST_USER_CHECK(l.accepts_inputs(in.size()), "model '", name_, "': layer '", l.name(), "' (", l.type(),
                  ") cannot take ", in.size(), " inputs");
    out[i] = l.configure_inputs(in);
  }
  return out.back();
}

// A node's output needs a gradient where the node has parameters or an input that needs one.
void Model::mark_gradient_flow() {
  output_needs_gradient_.assign(layers_.size(), false);
  for (size_t i = 0; i < layers_.size(); ++i) {
    bool needs = !layers_[i]->parameters().empty();
    for (int p : graph_.producers[i]) needs = needs || (p != kModelInput && output_needs_gradient_[p]);
    output_needs_gradient_[i] = needs;
  }
  runs_backward_ = output_needs_gradient_;
}

bool Model::needs_input_gradient(size_t layer, size_t input) const {
  const int p = graph_.producers.at(layer).at(input);
  return p != kModelInput && output_needs_gradient_[static_cast<size_t>(p)];
}

// The full names of layer i's parameters (then its buffers): after the twin's module count in
// sequential naming, after the node's name otherwise.
std::vector<std::string> Model::parameter_names(size_t layer) const {
  int module = 0;
  for (size_t i = 0; i < layer; ++i) module += layers_[i]->torch_module_count();
  const Layer& l = *layers_[layer];
  const std::string scope = l.parameter_scope();
  const auto in_scope = [&](const std::string& n) { return scope.empty() ? n : scope + "." + n; };
  std::vector<std::string> names;
  for (size_t k = 0; k < l.parameters().size(); ++k) {
    const TorchParameterPlace place = l.torch_place(k);
    names.push_back(naming_ == ParameterNaming::sequential
                        ? std::to_string(module + place.module_offset) + "." + place.name
                        : in_scope(l.parameters()[k].name));
  }
  for (const Buffer& b : l.buffers())
    names.push_back(naming_ == ParameterNaming::sequential ? std::to_string(module) + "." + b.name : in_scope(b.name));
  return names;
}

// Flat layout in reverse execution order: the last node's parameters come first.
void Model::lay_out_parameters() {
  slots_.clear();
  first_slot_.assign(layers_.size(), 0);
  int64_t total = 0;
  for (size_t li = layers_.size(); li-- > 0;) {
    first_slot_[li] = slots_.size();
    const auto& ps = layers_[li]->parameters();
    const auto names = parameter_names(li);
    for (size_t pi = 0; pi < ps.size(); ++pi) {
      const int64_t n = shape_numel(ps[pi].shape);
      slots_.push_back(ParameterSlot{li, pi, total, n, names[pi]});
      total += n;
    }
  }
  flat_params_ = Tensor::zeros({total}, DType::f32, name_ + ".parameters");
  flat_grads_ = Tensor::zeros({total}, DType::f32, name_ + ".gradients");
}

// Buffers in execution order, one flat buffer per type.
void Model::lay_out_buffers() {
  buffer_slots_.clear();
  int64_t total_f32 = 0, total_i64 = 0;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const auto& bs = layers_[li]->buffers();
    const auto names = parameter_names(li);
    for (size_t bi = 0; bi < bs.size(); ++bi) {
      int64_t& total = bs[bi].dtype == DType::i64 ? total_i64 : total_f32;
      const int64_t n = shape_numel(bs[bi].shape);
      buffer_slots_.push_back(BufferSlot{li, bi, bs[bi].dtype, total, n, names[layers_[li]->parameters().size() + bi]});
      total += n;
    }
  }
  if (total_f32 > 0) flat_buffers_f32_ = Tensor::zeros({total_f32}, DType::f32, name_ + ".buffers.f32");
  if (total_i64 > 0) flat_buffers_i64_ = Tensor::zeros({total_i64}, DType::i64, name_ + ".buffers.i64");
}

void Model::bind_flat_buffers() {
  const bool low = flat_compute_.defined() && compute_ != DType::f32;
  for (const auto& slot : slots_) {
    Parameter& p = layers_[slot.layer]->parameters()[slot.index];
    p.value = flat_params_.view(slot.offset, p.shape);
    p.grad = flat_grads_.view(slot.offset, p.shape);
    p.compute_value = low ? flat_compute_.view(slot.offset, p.shape) : p.value;
    p.op_value = p.compute_value;  // until bind_laid_out_parameters
  }
  for (const auto& slot : buffer_slots_) {
    Buffer& b = layers_[slot.layer]->buffers()[slot.index];
    b.value = flat_buffers(slot.dtype).view(slot.offset, b.shape);
  }
}

void Model::refresh_compute_parameters() {
  if (!backend_) return;
  if (compute_ != DType::f32) {
    visit_float_type(compute_, [&](auto t) {
      using T = decltype(t);
      launch_elements(backend_->compute_stream(), "round_parameters", flat_params_.numel(),
                      kernels::Cast<float, T>{flat_params_.device_data<float>(), flat_compute_.device_data<T>()});
    });
  }
  refresh_laid_out_parameters();
}

void Model::refresh_laid_out_parameters() {
  if (backend_) laid_out_.refresh(flat_params_);
}

// The parameters whose layers' ops read them in a layout of their own get their copies in it.
void Model::bind_laid_out_parameters() {
  std::vector<LaidOutParameters::Filter> filters;
  for (const auto& slot : slots_) {
    Parameter& p = layers_[slot.layer]->parameters()[slot.index];
    if (p.op_layout != FilterLayout::oihw) filters.push_back({&p, slot.offset});
  }
  laid_out_.build(*backend_, filters, compute_, name_);
  refresh_laid_out_parameters();
}

void Model::build(Backend& backend, int64_t batch, DType compute) {
  ST_CHECK(configured_, "model '", name_, "': configure() before build()");
  ST_CHECK(batch > 0, "batch size must be positive, got ", batch);
  ST_CHECK(compute == DType::f32 || compute == DType::bf16 || compute == DType::f16, "model '", name_,
           "': the compute type must be f32, bf16 or f16, not ", dtype_name(compute));
  (void)backend.precision_support(compute);  // throws for a type the backend cannot run
  batch_ = batch;
  compute_ = compute;
  if (backend.device() != flat_params_.device()) {
    Tensor params = backend.empty(flat_params_.shape(), DType::f32, name_ + ".parameters");
    Tensor grads = backend.zeros(flat_grads_.shape(), DType::f32, name_ + ".gradients");
    backend.copy_async(backend.compute_stream(), params, flat_params_);
    flat_params_ = params;
    flat_grads_ = grads;
    for (Tensor* flat : {&flat_buffers_f32_, &flat_buffers_i64_}) {
      if (!flat->defined()) continue;
      Tensor moved = backend.empty(flat->shape(), flat->dtype(), flat->name());
      backend.copy_async(backend.compute_stream(), moved, *flat);
      *flat = moved;
    }
    bind_flat_buffers();
  }
  backend_ = &backend;
  flat_compute_ = flat_params_;
  if (compute_ != DType::f32) {
    const std::string type(dtype_name(compute_));
    flat_compute_ = backend.empty(flat_params_.shape(), compute_, name_ + ".parameters." + type);
    const Shape logits = with_batch(batch, output_shape_);
    logits_f32_ = backend.empty(logits, DType::f32, name_ + ".logits.f32");
    dlogits_low_ = backend.empty(logits, compute_, name_ + ".dlogits." + type);
  }
  auxiliary_f32_.clear();
  auxiliary_dlogits_low_.clear();
  for (size_t k = 0; k < auxiliary_.size() && compute_ != DType::f32; ++k) {
    const Shape shape = with_batch(batch, layers_[auxiliary_positions_[k]]->output_shape());
    auxiliary_f32_.push_back(backend.empty(shape, DType::f32, auxiliary_[k].node + ".logits.f32"));
    auxiliary_dlogits_low_.push_back(backend.empty(shape, compute_, auxiliary_[k].node + ".dlogits"));
  }
  bind_flat_buffers();
  refresh_compute_parameters();
  for (auto& l : layers_) {
    l->attach(backend, compute_);
    l->build(backend, batch);
  }
  absorb_poolings();
  fold_batch_norms();
  fuse_residual_tails();
  build_gradient_sums();
  bind_laid_out_parameters();
}

// A pooling takes its input from a convolution whose output nothing else consumes.
void Model::absorb_poolings() {
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto* pool = dynamic_cast<Pool2D*>(layers_[i].get());
    if (!pool) continue;
    const int p = graph_.producers[i].front();
    if (p == kModelInput || graph_.consumers[static_cast<size_t>(p)].size() != 1) continue;
    Layer& producer = *layers_[static_cast<size_t>(p)];
    if (auto* sep = dynamic_cast<SeparableConv2D*>(&producer)) sep->absorb_pool(*pool);
    if (auto* conv = dynamic_cast<Conv2D*>(&producer)) conv->absorb_pool(*pool);
  }
}

// A BatchNorm2d folds into the convolution before it for evaluation where nothing else consumes that
// convolution's output and it has no activation of its own (Conv2D::fold_batch_norm).
void Model::fold_batch_norms() {
  if (!fold_batch_norms_) return;
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(layers_[i].get());
    if (!bn) continue;
    const int p = graph_.producers[i].front();
    if (p == kModelInput || graph_.consumers[static_cast<size_t>(p)].size() != 1) continue;
    if (auto* conv = dynamic_cast<Conv2D*>(layers_[static_cast<size_t>(p)].get())) conv->fold_batch_norm(*bn);
  }
}

// A residual block's tail, BatchNorm2d (no activation of its own) -> a two-input Add -> ReLU, each
// the sole consumer of the one before, becomes one pass forward and one backward: the Add takes over
// the BatchNorm's normalization and the ReLU (Add::fuse_batch_norm_relu).
void Model::fuse_residual_tails() {
  if (!fuse_residual_tails_) return;
  const auto sole_consumer = [&](size_t i) -> int {
    return graph_.consumers[i].size() == 1 ? static_cast<int>(graph_.consumers[i].front()) : -1;
  };
  for (size_t i = 0; i < layers_.size(); ++i) {
    auto* bn = dynamic_cast<BatchNorm2d*>(layers_[i].get());
    if (!bn || bn->activation() != Activation::none) continue;
    const int a = sole_consumer(i);
    auto* add = a < 0 ? nullptr : dynamic_cast<Add*>(layers_[static_cast<size_t>(a)].get());
    if (!add || graph_.producers[static_cast<size_t>(a)].size() != 2) continue;
    const int r = sole_consumer(static_cast<size_t>(a));
    auto* relu = r < 0 ? nullptr : dynamic_cast<ActivationLayer*>(layers_[static_cast<size_t>(r)].get());
    if (!relu || relu->activation() != Activation::relu || relu->absorbed()) continue;
    const auto& in = graph_.producers[static_cast<size_t>(a)];
    if (in[0] == in[1]) continue;
    const bool trains = runs_backward_[i];
    if (runs_backward_[static_cast<size_t>(a)] != trains || runs_backward_[static_cast<size_t>(r)] != trains) continue;
    add->fuse_batch_norm_relu(*bn, in[0] == static_cast<int>(i) ? 0 : 1);
    relu->absorb_into_producer();
  }
}

// A sum buffer for every output whose gradient arrives along more than one edge.
void Model::build_gradient_sums() {
  std::vector<int> edges(layers_.size(), 0);
  for (size_t i = 0; i < layers_.size(); ++i)
    for (size_t k = 0; k < graph_.producers[i].size(); ++k)
      if (runs_backward_[i] && needs_input_gradient(i, k)) ++edges[static_cast<size_t>(graph_.producers[i][k])];
  gradient_sums_.assign(layers_.size(), Tensor());
  for (size_t i = 0; i < layers_.size(); ++i)
    if (edges[i] > 1)
      gradient_sums_[i] = backend_->empty(with_batch(batch_, layers_[i]->output_shape()), compute_,
                                          layers_[i]->name() + ".output_gradient_sum");
}

const Tensor& Model::forward(const Tensor& x, bool training) {
  ST_CHECK(batch_ > 0, "model '", name_, "': build() before forward()");
  ST_CHECK(x.numel() == batch_ * shape_numel(input_shape_), "model '", name_, "' input has shape ",
           shape_string(x.shape()), ", expected ", batch_, " samples of ", shape_string(input_shape_));
  ST_CHECK(x.dtype() == compute_, "model '", name_, "' computes in ", dtype_name(compute_), " but its input '", x.name(),
           "' is ", dtype_name(x.dtype()));
  ST_USER_CHECK(!training || evaluation_only_.empty(), "model '", name_, "' cannot train: ", evaluation_only_);
  outputs_.assign(layers_.size(), nullptr);
  std::vector<const Tensor*> in;
  for (size_t i = 0; i < layers_.size(); ++i) {
    if (!training && training_only_[i]) continue;
    in.clear();
    for (int p : graph_.producers[i]) in.push_back(p == kModelInput ? &x : outputs_[static_cast<size_t>(p)]);
    if (observer_ && training) observer_->layer_begin(i, false);
    outputs_[i] = &layers_[i]->forward_inputs(in, training);
    if (observer_ && training) observer_->layer_end(i, false);
  }
  if (compute_ == DType::f32) return *outputs_.back();
  const auto to_f32 = [&](const Tensor& low, const Tensor& f32, const char* label) {
    visit_float_type(compute_, [&](auto t) {
      using T = decltype(t);
      launch_elements(backend_->compute_stream(), label, low.numel(),
                      kernels::Cast<T, float>{low.device_data<T>(), f32.device_data<float>()});
    });
  };
  if (training)
    for (size_t k = 0; k < auxiliary_.size(); ++k)
      to_f32(*outputs_[auxiliary_positions_[k]], auxiliary_f32_[k], "auxiliary_logits_to_f32");
  to_f32(*outputs_.back(), logits_f32_, "logits_to_f32");
  return logits_f32_;
}

// The gradient of layer p's output gains dx: the first arrival is kept as it is, later ones are
// summed into the layer's sum buffer.
void Model::add_gradient(int producer, const Tensor& dx) {
  const size_t p = static_cast<size_t>(producer);
  if (!output_grads_[p]) {
    output_grads_[p] = &dx;
    return;
  }
  Tensor& sum = gradient_sums_[p];
  const Tensor& before = *output_grads_[p];
  visit_float_type(compute_, [&](auto t) {
    using T = decltype(t);
    launch_elements(backend_->compute_stream(), "sum_gradients", sum.numel(),
                    kernels::AddTensors<T>{before.device_data<T>(), dx.device_data<T>(), sum.device_data<T>()});
  });
  output_grads_[p] = &sum;
}

// The gradient that enters backward at an output: dlogits itself in f32, else its copy in the
// compute type (`low`).
const Tensor* Model::seed_gradient(const Tensor& dlogits, Tensor& low, const char* what) {
  ST_CHECK(dlogits.dtype() == DType::f32, "model '", name_, "': the gradient of the ", what, " must be f32, got ",
           dtype_name(dlogits.dtype()));
  if (compute_ == DType::f32) return &dlogits;
  visit_float_type(compute_, [&](auto t) {
    using T = decltype(t);
    launch_elements(backend_->compute_stream(), "dlogits_to_compute_type", dlogits.numel(),
                    kernels::Cast<float, T>{dlogits.device_data<float>(), low.device_data<T>()});
  });
  return &low;
}

void Model::backward(const Tensor& dlogits, const std::function<void(size_t)>& on_layer_done,
                     const std::vector<const Tensor*>& auxiliary_dlogits) {
  ST_CHECK(auxiliary_dlogits.size() == auxiliary_.size(), "model '", name_, "' has ", auxiliary_.size(),
           " auxiliary outputs; backward got ", auxiliary_dlogits.size(), " gradients for them");
  output_grads_.assign(layers_.size(), nullptr);
  output_grads_.back() = seed_gradient(dlogits, dlogits_low_, "logits");
  for (size_t k = 0; k < auxiliary_.size(); ++k)
    output_grads_[auxiliary_positions_[k]] = seed_gradient(
        *auxiliary_dlogits[k], compute_ == DType::f32 ? dlogits_low_ : auxiliary_dlogits_low_[k], "auxiliary logits");
  std::vector<bool> need;
  std::vector<const Tensor*> dx;
  for (size_t li = layers_.size(); li-- > 0;) {
    if (runs_backward_[li]) {
      const size_t n = graph_.producers[li].size();
      need.assign(n, false);
      dx.assign(n, nullptr);
      for (size_t k = 0; k < n; ++k) need[k] = needs_input_gradient(li, k);
      ST_CHECK(output_grads_[li] != nullptr, "model '", name_, "': no gradient reached layer '", layers_[li]->name(), "'");
      if (observer_) observer_->layer_begin(li, true);
      layers_[li]->backward_inputs(*output_grads_[li], need, dx);
      for (size_t k = 0; k < n; ++k)
        if (need[k]) add_gradient(graph_.producers[li][k], *dx[k]);
      if (observer_) observer_->layer_end(li, true);
    }
    if (on_layer_done) on_layer_done(li);
  }
}

void Model::set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) {
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->set_random_state(kernels::mix64(seed + 0x9E37 * (i + 1)), step, sample_index);
}

int64_t Model::flops_per_sample() const {
  int64_t f = 0;
  for (const auto& l : layers_) f += l->flops_per_sample();
  return f;
}

int64_t Model::training_flops_of_layer(size_t i) const {
  bool dx = false;
  for (size_t k = 0; k < graph_.producers.at(i).size(); ++k) dx = dx || needs_input_gradient(i, k);
  const int64_t passes = !runs_backward_.at(i) ? 1 : dx ? 3 : 2;
  return passes * layers_.at(i)->flops_per_sample();
}

int64_t Model::training_flops_per_sample() const {
  int64_t f = 0;
  for (size_t i = 0; i < layers_.size(); ++i) f += training_flops_of_layer(i);
  return f;
}

}  // namespace scaletrain::nn
