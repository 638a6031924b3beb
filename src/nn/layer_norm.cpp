// LayerNorm on the per-row reductions and the column sums (kernels/layer_norm.hpp).
#include "scaletrain/nn/layer_norm.hpp"

#include <algorithm>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/layer_norm.hpp"

namespace scaletrain::nn {

Shape LayerNorm::configure(const Shape& in) {
  if (in.empty() || in.back() <= 0) shape_error("expects [..., C] input per sample, got " + shape_string(in));
  if (!(eps_ >= 0)) shape_error("eps must not be negative");
  in_shape_ = out_shape_ = in;
  cols_ = in.back();
  params_.clear();
  declare("weight", {cols_}, Init::ones, 0, 0).norm = true;
  declare("bias", {cols_}, Init::zeros, 0, 0).norm = true;
  return out_shape_;
}

void LayerNorm::build(Backend& backend, int64_t batch) {
  rows_ = batch * (shape_numel(in_shape_) / cols_);
  rows_plan_ = kernels::plan_rows(rows_, cols_);
  grad_plan_ = kernels::plan_column_sums(rows_, cols_, 2, backend.multiprocessor_count());
  y_ = buffer(with_batch(batch, in_shape_), "y");
  dx_ = buffer(y_.shape(), "dx");
  mean_ = buffer({rows_}, "mean", DType::f32);
  rstd_ = buffer({rows_}, "rstd", DType::f32);
  partial_ = buffer({std::max<int64_t>(1, grad_plan_.partial_size())}, "partial_sums", DType::f64);
}

const Tensor& LayerNorm::forward(const Tensor& x, bool training) {
  x_ = x;
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch_row_reductions(stream(), "layer_norm_forward", rows_plan_,
                          kernels::LayerNormForward<T>{x.device_data<T>(), params_[0].value.device_data<float>(),
                                                       params_[1].value.device_data<float>(), y_.device_data<T>(),
                                                       mean_.device_data<float>(), rstd_.device_data<float>(), cols_,
                                                       static_cast<float>(eps_)});
  });
  return y_;
}

const Tensor& LayerNorm::backward(const Tensor& dy, bool need_dx) {
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const T* x = x_.device_data<T>();
    const T* g = dy.device_data<T>();
    const float* mean = mean_.device_data<float>();
    const float* rstd = rstd_.device_data<float>();
    launch_column_sums(stream(), "layer_norm_weight_gradients", grad_plan_,
                       kernels::LayerNormGradientTerms<T>{x, g, mean, rstd, cols_}, partial_.device_data<double>(),
                       kernels::StoreTwoVectors{params_[0].grad.device_data<float>(),
                                                params_[1].grad.device_data<float>(), cols_});
    if (need_dx)
      launch_row_reductions(stream(), "layer_norm_backward", rows_plan_,
                            kernels::LayerNormBackwardData<T>{x, g, params_[0].value.device_data<float>(), mean, rstd,
                                                              dx_.device_data<T>(), rows_, cols_});
  });
  return need_dx ? dx_ : no_gradient();
}

}  // namespace scaletrain::nn
