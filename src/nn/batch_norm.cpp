// BatchNorm2d on top of the kernels/batch_norm.hpp functors: per-channel sums on the reduction
// primitive (kernels/reduction.hpp, planned at build for the backend's SMs), the sums over the ranks
// where a reducer is set, then one pass that normalizes (and applies the ReLU). Where
// the backend has a BatchNormOp and no reducer is set, the op runs the layer instead. Folded into the
// convolution before it, the evaluation forward only hands on what that convolution wrote.
#include "scaletrain/nn/batch_norm.hpp"

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/batch_norm.hpp"

namespace scaletrain::nn {

BatchNorm2d::BatchNorm2d(std::string name, Activation activation, float momentum, float eps)
    : Layer(std::move(name)), activation_(activation), momentum_(momentum), eps_(eps) {
  ST_CHECK(activation == Activation::none || activation == Activation::relu, "layer '", name_,
           "' (BatchNormalization): only a ReLU can be fused after it, got ", activation_name(activation));
}

Shape BatchNorm2d::configure(const Shape& in) {
  if (in.empty()) shape_error("expects [..., C] input per sample, got a scalar");
  channels_ = in.back();
  in_shape_ = out_shape_ = in;
  params_.clear();
  buffers_.clear();
  declare("weight", {channels_}, Init::ones, 0, 0).norm = true;
  declare("bias", {channels_}, Init::zeros, 0, 0).norm = true;
  declare_buffer("running_mean", {channels_}, DType::f32, 0.0);
  declare_buffer("running_var", {channels_}, DType::f32, 1.0);
  declare_buffer("num_batches_tracked", {}, DType::i64, 0.0);
  return out_shape_;
}

void BatchNorm2d::build(Backend& backend, int64_t batch) {
  rows_ = batch * shape_numel(in_shape_) / channels_;
  fused_residual_ = false;  // until Model::build fuses again
  const int sms = backend.multiprocessor_count();
  sums_plan_ = kernels::plan_column_sums(rows_, channels_, 1, sms);
  gradient_sums_plan_ = kernels::plan_column_sums(rows_, channels_, 2, sms);
  y_ = buffer(with_batch(batch, out_shape_), "y");
  dx_ = buffer(with_batch(batch, in_shape_), "dx");
  partial_ = buffer({std::max<int64_t>(1, gradient_sums_plan_.partial_size())}, "partial_sums", DType::f64);
  sums_ = buffer({2 * channels_ + 1}, "sums", DType::f64);
  mean_ = buffer({channels_}, "mean", DType::f32);
  invstd_ = buffer({channels_}, "invstd", DType::f32);
  scale_ = buffer({channels_}, "scale", DType::f32);
  shift_ = buffer({channels_}, "shift", DType::f32);
  count_ = buffer({2}, "count", DType::f32);
  const int64_t spatial = shape_numel(in_shape_) / channels_;
  op_ = backend.make_batch_norm(
      BatchNormShape{batch, spatial, channels_, activation_, momentum_, eps_, dtype_}, &stream());
}

std::string BatchNorm2d::implementation() const { return op_ ? op_->implementation() : std::string(); }

// mean_, invstd_, scale_ and shift_ from x's statistics (over the ranks with a reducer): the sums
// and the count, the mean, then the squared deviations from it (two passes, which keeps the variance
// exact where the mean is large against the spread). Updates the running statistics. Without a
// reducer the mean and the scale are computed by the sums' sinks, one launch each less.
void BatchNorm2d::batch_statistics(const Tensor& x) {
  double* sums = sums_.device_data<double>();
  double* partial = partial_.device_data<double>();
  const kernels::BnSumsAndCount sums_sink{sums, channels_, static_cast<double>(rows_)};
  const kernels::BnMean mean{sums, mean_.device_data<float>(), count_.device_data<float>(), channels_};
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const kernels::ColumnValues<T> values{x.device_data<T>(), channels_};
    if (reducer_)
      launch_column_sums(stream(), "bn_sums", sums_plan_, values, partial, sums_sink);
    else
      launch_column_sums(stream(), "bn_sums", sums_plan_, values, partial, kernels::BnSumsToMean{sums_sink, mean});
  });
  if (reducer_) {
    reducer_->sum(sums_.view(0, {channels_ + 1}), stream());
    launch(stream(), "bn_mean", channels_, mean);
  }
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const kernels::BnSquaredDeviations<T> deviations{x.device_data<T>(), mean_.device_data<float>(), channels_};
    if (reducer_)
      launch_column_sums(stream(), "bn_squared_deviations", sums_plan_, deviations, partial,
                         kernels::BnSquaredDeviationSums{sums});
    else
      launch_column_sums(stream(), "bn_squared_deviations", sums_plan_, deviations, partial,
                         kernels::BnDeviationsToScale{kernels::BnSquaredDeviationSums{sums}, training_scale()});
  });
  if (!reducer_) return;
  reducer_->sum(sums_.view(0, {channels_}), stream());
  update_running_statistics();
}

kernels::BnTrainingScale BatchNorm2d::training_scale() {
  return kernels::BnTrainingScale{sums_.device_data<double>(), count_.device_data<float>(), mean_.device_data<float>(),
                                  params_[0].value.device_data<float>(), params_[1].value.device_data<float>(),
                                  invstd_.device_data<float>(), scale_.device_data<float>(),
                                  shift_.device_data<float>(), buffers_[0].value.device_data<float>(),
                                  buffers_[1].value.device_data<float>(),
                                  buffers_[2].value.device_data<int64_t>(), momentum_, eps_};
}

void BatchNorm2d::update_running_statistics() { launch(stream(), "bn_training_scale", channels_, training_scale()); }

void BatchNorm2d::count_batch() {
  launch(stream(), "bn_count_batch", 1, kernels::BnCountBatch{buffers_[2].value.device_data<int64_t>()});
}

std::pair<const float*, const float*> BatchNorm2d::evaluation_scale_and_shift() {
  launch(stream(), "bn_eval_scale", channels_,
         kernels::BnEvalScale{buffers_[0].value.device_data<float>(), buffers_[1].value.device_data<float>(),
                              params_[0].value.device_data<float>(), params_[1].value.device_data<float>(),
                              scale_.device_data<float>(), shift_.device_data<float>(), eps_});
  return {scale_.device_data<float>(), shift_.device_data<float>()};
}

const Tensor& BatchNorm2d::forward(const Tensor& x, bool training) {
  x_ = x;
  if (!training && folded_) return y_;
  if (uses_op()) {
    float* weight = params_[0].value.device_data<float>();
    float* bias = params_[1].value.device_data<float>();
    float* running_mean = buffers_[0].value.device_data<float>();
    float* running_var = buffers_[1].value.device_data<float>();
    if (training) {
      op_->forward_training(x.device_raw(), weight, bias, running_mean, running_var, mean_.device_data<float>(),
                            invstd_.device_data<float>(), y_.device_raw());
      count_batch();
    } else {
      op_->forward_inference(x.device_raw(), weight, bias, running_mean, running_var, y_.device_raw());
    }
    return y_;
  }
  if (training) {
    batch_statistics(x);
  } else {
    evaluation_scale_and_shift();
  }
  if (fused_residual_) return y_;  // the Add applies it (forward_residual_relu)
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const T* xd = x.device_data<T>();
    T* yd = y_.device_data<T>();
    launch_channel_packs<T, kernels::BnApply>(stream(), "bn_apply", rows_, channels_,
                                              kernels::pack_fits<T>(channels_, {xd, yd}), xd, yd,
                                              scale_.device_data<float>(), shift_.device_data<float>(), channels_,
                                              activation_ == Activation::relu);
  });
  return y_;
}

void BatchNorm2d::forward_residual_relu(const Tensor& residual, const Tensor& out, bool training) {
  ST_CHECK(fused_residual_, "layer '", name_, "': forward_residual_relu without fuse_residual_relu");
  const bool normalized = !training && folded_;  // the convolution wrote the normalized values into y_
  if (normalized)
    launch(stream(), "bn_identity_scale", channels_,
           kernels::BnIdentityScale{scale_.device_data<float>(), shift_.device_data<float>()});
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const T* xd = normalized ? y_.device_data<T>() : x_.device_data<T>();
    const T* sd = residual.device_data<T>();
    T* yd = out.device_data<T>();
    launch_channel_packs<T, kernels::BnApplyAddRelu>(stream(), "bn_apply_add_relu", rows_, channels_,
                                                     kernels::pack_fits<T>(channels_, {xd, sd, yd}), xd, sd, yd,
                                                     scale_.device_data<float>(), shift_.device_data<float>(),
                                                     channels_);
  });
}

// The sums of the (masked) gradient and of its product with xhat give the affine parameters'
// gradients (this rank's rows: the gradient all-reduce sums them over the ranks), then, summed over
// the ranks where a reducer is set, the input's gradient. Fused with a residual Add and ReLU, the
// Add's backward has run this already (backward_residual_relu).
const Tensor& BatchNorm2d::backward(const Tensor& dy, bool need_dx) {
  if (fused_residual_) return need_dx ? dx_ : no_gradient();
  if (uses_op()) {
    op_->backward(x_.device_raw(), y_.device_raw(), dy.device_raw(), params_[0].value.device_data<float>(),
                  mean_.device_data<float>(), invstd_.device_data<float>(), params_[0].grad.device_data<float>(),
                  params_[1].grad.device_data<float>(), dx_.device_raw());
    return need_dx ? dx_ : no_gradient();
  }
  gradients(y_, dy, need_dx, activation_ == Activation::relu, nullptr);
  return need_dx ? dx_ : no_gradient();
}

// On a device one pass writes dx and the shortcut's gradient. The cpu backend (its streams run
// inline) runs the same values as the unfused layers do, the mask into dresidual first and then
// BatchNorm's passes over it: a core streams 3 arrays in and 2 out at a lower rate than the passes'
// 2 or 3 (perf/README.md).
void BatchNorm2d::backward_residual_relu(const Tensor& y, const Tensor& dy, const Tensor* dresidual) {
  ST_CHECK(fused_residual_, "layer '", name_, "': backward_residual_relu without fuse_residual_relu");
  if (!dresidual || !stream().runs_inline()) {
    gradients(y, dy, true, true, dresidual);
    return;
  }
  launch_activation_backward_from_output(stream(), Activation::relu, dtype_, y.device_raw(), dy.device_raw(),
                                         dresidual->device_raw(), y.numel());
  gradients(y, *dresidual, true, false, nullptr);
}

// The gradient sums over (x, y, dy), with the ReLU's mask from y where `relu`, the parameters'
// gradients, and (need_dx) the input's gradient, with g itself into dresidual where given.
void BatchNorm2d::gradients(const Tensor& y, const Tensor& dy, bool need_dx, bool relu, const Tensor* dresidual) {
  double* sums = sums_.device_data<double>();
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch_column_sums(stream(), "bn_gradient_sums", gradient_sums_plan_,
                       kernels::BnGradientTerms<T>{x_.device_data<T>(), y.device_data<T>(), dy.device_data<T>(),
                                                   mean_.device_data<float>(), invstd_.device_data<float>(),
                                                   channels_, relu},
                       partial_.device_data<double>(),
                       kernels::BnGradientSums{sums, params_[0].grad.device_data<float>(),
                                               params_[1].grad.device_data<float>(), channels_});
  });
  if (!need_dx) return;
  if (reducer_) reducer_->sum(sums_.view(0, {2 * channels_}), stream());
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const T *xd = x_.device_data<T>(), *yd = y.device_data<T>(), *dyd = dy.device_data<T>();
    T* dxd = dx_.device_data<T>();
    const float *mean = mean_.device_data<float>(), *invstd = invstd_.device_data<float>();
    const float *weight = params_[0].value.device_data<float>(), *count = count_.device_data<float>();
    const double* sd = sums;
    if (dresidual) {
      T* drd = dresidual->device_data<T>();
      launch_channel_packs<T, kernels::BnBackwardDataResidual>(
          stream(), "bn_backward_data_residual", rows_, channels_,
          kernels::pack_fits<T>(channels_, {xd, yd, dyd, dxd, drd}), xd, yd, dyd, dxd, drd, mean, invstd, weight, sd,
          count, channels_);
    } else {
      launch_channel_packs<T, kernels::BnBackwardData>(stream(), "bn_backward_data", rows_, channels_,
                                                       kernels::pack_fits<T>(channels_, {xd, yd, dyd, dxd}), xd, yd,
                                                       dyd, dxd, mean, invstd, weight, sd, count, channels_, relu);
    }
  });
}

int64_t BatchNorm2d::flops_per_sample() const { return 2 * shape_numel(in_shape_); }

}  // namespace scaletrain::nn
