// Model: configure/bind/build of the layer chain, forward in order, backward in reverse.
#include "scaletrain/nn/model.hpp"

#include <cctype>
#include <map>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/random.hpp"
#include "scaletrain/nn/conv2d.hpp"
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

Layer& Model::add(LayerPtr layer) {
  ST_CHECK(!configured_, "model '", name_, "': layers must be added before configure()");
  if (layer->name().empty()) {
    const std::string base = snake_case(layer->type());
    int used = 0;
    for (const auto& l : layers_)
      if (l->name() == base || l->name().rfind(base + "_", 0) == 0) ++used;
    layer->set_name(used == 0 ? base : base + "_" + std::to_string(used));
  }
  layers_.push_back(std::move(layer));
  return *layers_.back();
}

void Model::configure(const Shape& input_sample) {
  ST_CHECK(!layers_.empty(), "model '", name_, "' has no layers");
  input_shape_ = input_sample;
  Shape s = input_sample;
  for (auto& l : layers_) s = l->configure(s);
  output_shape_ = s;

  // Flat layout in reverse layer order: the last layer's parameters come first.
  slots_.clear();
  first_slot_.assign(layers_.size(), 0);
  int64_t total = 0;
  for (size_t li = layers_.size(); li-- > 0;) {
    first_slot_[li] = slots_.size();
    auto& ps = layers_[li]->parameters();
    for (size_t pi = 0; pi < ps.size(); ++pi) {
      const int64_t n = shape_numel(ps[pi].shape);
      slots_.push_back(ParameterSlot{li, pi, total, n});
      total += n;
    }
  }
  flat_params_ = Tensor::zeros({total}, DType::f32, name_ + ".parameters");
  flat_grads_ = Tensor::zeros({total}, DType::f32, name_ + ".gradients");
  bind_flat_buffers();
  configured_ = true;
}

void Model::bind_flat_buffers() {
  const bool low = flat_compute_.defined() && compute_ != DType::f32;
  for (const auto& slot : slots_) {
    Parameter& p = layers_[slot.layer]->parameters()[slot.index];
    p.value = flat_params_.view(slot.offset, p.shape);
    p.grad = flat_grads_.view(slot.offset, p.shape);
    p.compute_value = low ? flat_compute_.view(slot.offset, p.shape) : p.value;
  }
}

void Model::refresh_compute_parameters() {
  if (!backend_ || compute_ == DType::f32) return;
  visit_float_type(compute_, [&](auto t) {
    using T = decltype(t);
    launch(backend_->compute_stream(), "round_parameters", flat_params_.numel(),
           kernels::Cast<float, T>{flat_params_.device_data<float>(), flat_compute_.device_data<T>()});
  });
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
    bind_flat_buffers();
  }
  backend_ = &backend;
  flat_compute_ = flat_params_;
  if (compute_ != DType::f32) {
    const std::string type(dtype_name(compute_));
    flat_compute_ = backend.empty(flat_params_.shape(), compute_, name_ + ".parameters." + type);
    Shape logits{batch};
    logits.insert(logits.end(), output_shape_.begin(), output_shape_.end());
    logits_f32_ = backend.empty(logits, DType::f32, name_ + ".logits.f32");
    dlogits_low_ = backend.empty(logits, compute_, name_ + ".dlogits." + type);
  }
  bind_flat_buffers();
  refresh_compute_parameters();
  for (auto& l : layers_) {
    l->attach(backend, compute_);
    l->build(backend, batch);
  }
  absorb_poolings();
}

void Model::absorb_poolings() {
  for (size_t i = 0; i + 1 < layers_.size(); ++i) {
    auto* pool = dynamic_cast<Pool2D*>(layers_[i + 1].get());
    if (!pool) continue;
    if (auto* sep = dynamic_cast<SeparableConv2D*>(layers_[i].get())) sep->absorb_pool(*pool);
    if (auto* conv = dynamic_cast<Conv2D*>(layers_[i].get())) conv->absorb_pool(*pool);
  }
}

const Tensor& Model::forward(const Tensor& x, bool training) {
  ST_CHECK(batch_ > 0, "model '", name_, "': build() before forward()");
  ST_CHECK(x.numel() == batch_ * shape_numel(input_shape_), "model '", name_, "' input has shape ",
           shape_string(x.shape()), ", expected ", batch_, " samples of ", shape_string(input_shape_));
  ST_CHECK(x.dtype() == compute_, "model '", name_, "' computes in ", dtype_name(compute_), " but its input '", x.name(),
           "' is ", dtype_name(x.dtype()));
  const Tensor* cur = &x;
  for (auto& l : layers_) cur = &l->forward(*cur, training);
  if (compute_ == DType::f32) return *cur;
  visit_float_type(compute_, [&](auto t) {
    using T = decltype(t);
    launch(backend_->compute_stream(), "logits_to_f32", cur->numel(),
           kernels::Cast<T, float>{cur->device_data<T>(), logits_f32_.device_data<float>()});
  });
  return logits_f32_;
}

void Model::backward(const Tensor& dlogits, const std::function<void(size_t)>& on_layer_done) {
  ST_CHECK(dlogits.dtype() == DType::f32, "model '", name_, "': the gradient of the logits must be f32, got ",
           dtype_name(dlogits.dtype()));
  const Tensor* cur = &dlogits;
  if (compute_ != DType::f32) {
    visit_float_type(compute_, [&](auto t) {
      using T = decltype(t);
      launch(backend_->compute_stream(), "dlogits_to_compute_type", dlogits.numel(),
             kernels::Cast<float, T>{dlogits.device_data<float>(), dlogits_low_.device_data<T>()});
    });
    cur = &dlogits_low_;
  }
  // No gradient flows into the input, nor through the layers before the first one with parameters
  // (mlp's Flatten): that layer computes no dx, and the ones before it run no backward.
  const size_t first_trained = first_layer_with_parameters();
  for (size_t li = layers_.size(); li-- > 0;) {
    if (li >= first_trained) cur = &layers_[li]->backward(*cur, li > first_trained);
    if (on_layer_done) on_layer_done(li);
  }
}

size_t Model::first_layer_with_parameters() const {
  for (size_t li = 0; li < layers_.size(); ++li)
    if (!layers_[li]->parameters().empty()) return li;
  return layers_.size();
}

void Model::set_random_state(uint64_t seed, uint64_t step, const Tensor& sample_index) {
  for (size_t i = 0; i < layers_.size(); ++i)
    layers_[i]->set_random_state(kernels::mix64(seed + 0x9E37 * (i + 1)), step, sample_index);
}

int64_t Model::flops_per_sample() const {
  int64_t f = 0;
  for (const auto& l : layers_) f += l->flops_per_sample();
  return f;
}

int64_t Model::training_flops_of_layer(size_t i) const {
  const size_t first = first_layer_with_parameters();
  const int64_t passes = i > first ? 3 : i == first ? 2 : 1;
  return passes * layers_.at(i)->flops_per_sample();
}

int64_t Model::training_flops_per_sample() const {
  int64_t f = 0;
  for (size_t i = 0; i < layers_.size(); ++i) f += training_flops_of_layer(i);
  return f;
}

}  // namespace scaletrain::nn
