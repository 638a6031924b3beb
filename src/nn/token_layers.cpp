// Token layers (kernels/tokens.hpp); the learned tokens' gradients are column sums over the batch.
#include "scaletrain/nn/token_layers.hpp"

#include <algorithm>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/tokens.hpp"

namespace scaletrain::nn {

Shape Reshape::configure(const Shape& in) {
  if (shape_numel(target_) != shape_numel(in))
    shape_error("cannot reshape " + shape_string(in) + " to " + shape_string(target_) + ": the element counts differ");
  in_shape_ = in;
  out_shape_ = target_;
  return out_shape_;
}

const Tensor& Reshape::forward(const Tensor& x, bool training) {
  y_ = x.reshape(with_batch(batch_, out_shape_));
  return y_;
}

const Tensor& Reshape::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  dx_ = dy.reshape(with_batch(batch_, in_shape_));
  return dx_;
}

std::string NodeNamedParameterLayer::parameter_scope() const {
  const size_t dot = name_.rfind('.');
  return dot == std::string::npos ? std::string() : name_.substr(0, dot);
}

std::string NodeNamedParameterLayer::parameter_name() const {
  const size_t dot = name_.rfind('.');
  return dot == std::string::npos ? name_ : name_.substr(dot + 1);
}

Shape ClassToken::configure(const Shape& in) {
  if (in.size() != 2) shape_error("expects [tokens, channels] input per sample, got " + shape_string(in));
  tokens_ = in[0];
  channels_ = in[1];
  in_shape_ = in;
  out_shape_ = {tokens_ + 1, channels_};
  params_.clear();
  declare(parameter_name(), {1, 1, channels_}, Init::zeros, 0, 0).embedding = true;  // torchvision: zeros
  return out_shape_;
}

void ClassToken::build(Backend& backend, int64_t batch) {
  grad_plan_ = kernels::plan_column_sums(batch, channels_, 1, backend.multiprocessor_count());
  y_ = buffer(with_batch(batch, out_shape_), "y");
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
  partial_ = buffer({std::max<int64_t>(1, grad_plan_.partial_size())}, "partial_sums", DType::f64);
}

const Tensor& ClassToken::forward(const Tensor& x, bool training) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "class_token_forward", y_.numel(),
           kernels::PrependToken<T>{x.device_data<T>(), params_[0].value.device_data<float>(), y_.device_data<T>(),
                                    tokens_, channels_});
  });
  return y_;
}

const Tensor& ClassToken::backward(const Tensor& dy, bool need_dx) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    // The token's gradient: token 0 of every sample, summed over the batch.
    launch_column_sums(stream(), "class_token_gradient", grad_plan_,
                       kernels::ColumnValues<T>{dy.device_data<T>(), (tokens_ + 1) * channels_},
                       partial_.device_data<double>(), kernels::StoreFloat{params_[0].grad.device_data<float>()});
    if (need_dx)
      launch(stream(), "class_token_backward", dx_.numel(),
             kernels::DropFirstToken<T>{dy.device_data<T>(), dx_.device_data<T>(), tokens_, channels_});
  });
  return need_dx ? dx_ : no_gradient();
}

Shape PositionEmbedding::configure(const Shape& in) {
  if (in.size() != 2) shape_error("expects [tokens, channels] input per sample, got " + shape_string(in));
  in_shape_ = out_shape_ = in;
  params_.clear();
  declare(parameter_name(), {1, in[0], in[1]}, Init::normal_002, 0, 0).embedding = true;  // torchvision: std 0.02
  return out_shape_;
}

void PositionEmbedding::build(Backend& backend, int64_t batch) {
  grad_plan_ = kernels::plan_column_sums(batch, shape_numel(in_shape_), 1, backend.multiprocessor_count());
  y_ = buffer(with_batch(batch, in_shape_), "y");
  partial_ = buffer({std::max<int64_t>(1, grad_plan_.partial_size())}, "partial_sums", DType::f64);
}

const Tensor& PositionEmbedding::forward(const Tensor& x, bool training) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "position_embedding_forward", y_.numel(),
           kernels::AddPositions<T>{x.device_data<T>(), params_[0].value.device_data<float>(), y_.device_data<T>(),
                                    shape_numel(in_shape_)});
  });
  return y_;
}

const Tensor& PositionEmbedding::backward(const Tensor& dy, bool need_dx) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch_column_sums(stream(), "position_embedding_gradient", grad_plan_,
                       kernels::ColumnValues<T>{dy.device_data<T>(), shape_numel(in_shape_)},
                       partial_.device_data<double>(), kernels::StoreFloat{params_[0].grad.device_data<float>()});
  });
  return need_dx ? dy : no_gradient();
}

Shape SelectToken::configure(const Shape& in) {
  if (in.size() != 2) shape_error("expects [tokens, channels] input per sample, got " + shape_string(in));
  if (index_ < 0 || index_ >= in[0])
    shape_error("token " + std::to_string(index_) + " is outside the " + std::to_string(in[0]) + " tokens");
  in_shape_ = in;
  out_shape_ = {in[1]};
  return out_shape_;
}

void SelectToken::build(Backend& backend, int64_t batch) {
  y_ = buffer(with_batch(batch, out_shape_), "y");
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
}

const Tensor& SelectToken::forward(const Tensor& x, bool training) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "select_token_forward", y_.numel(),
           kernels::SelectToken<T>{x.device_data<T>(), y_.device_data<T>(), in_shape_[0], in_shape_[1], index_});
  });
  return y_;
}

const Tensor& SelectToken::backward(const Tensor& dy, bool need_dx) {
  if (!need_dx) return no_gradient();
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch(stream(), "select_token_backward", dx_.numel(),
           kernels::SelectTokenBackward<T>{dy.device_data<T>(), dx_.device_data<T>(), in_shape_[0], in_shape_[1],
                                           index_});
  });
  return dx_;
}

}  // namespace scaletrain::nn
