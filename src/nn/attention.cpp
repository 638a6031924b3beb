// Multi-head self-attention: the projections as linear maps, the heads' products as MatmulOps over
// the (sample, head) batch, and the softmax and head-order copies of kernels/attention.hpp.
#include "scaletrain/nn/attention.hpp"

#include <cmath>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/kernels/dropout.hpp"

namespace scaletrain::nn {

MultiheadSelfAttention::MultiheadSelfAttention(std::string name, int64_t heads, float attention_dropout)
    : Layer(std::move(name)), heads_(heads), dropout_(attention_dropout) {}

Shape MultiheadSelfAttention::configure(const Shape& in) {
  if (in.size() != 2) shape_error("expects [tokens, channels] input per sample, got " + shape_string(in));
  if (heads_ <= 0 || in[1] % heads_ != 0)
    shape_error("channels " + std::to_string(in[1]) + " must divide into " + std::to_string(heads_) + " heads");
  if (!(dropout_ >= 0.0f && dropout_ < 1.0f)) shape_error("attention dropout must be in [0, 1)");
  tokens_ = in[0];
  channels_ = in[1];
  dim_ = channels_ / heads_;
  in_shape_ = out_shape_ = in;
  params_.clear();
  const int64_t c = channels_;
  // torch.nn.MultiheadAttention._reset_parameters: xavier_uniform_ in_proj_weight, zero biases; out_proj
  // keeps nn.Linear's weight init.
  declare("in_proj_weight", {3 * c, c}, Init::glorot_uniform, c, 3 * c);
  declare("in_proj_bias", {3 * c}, Init::zeros, 0, 0);
  declare("out_proj.weight", {c, c}, Init::pytorch_default, c, c);
  declare("out_proj.bias", {c}, Init::zeros, 0, 0);
  return out_shape_;
}

MatmulShape MultiheadSelfAttention::product(bool trans_a, bool trans_b, int64_t n, int64_t k, float alpha) const {
  MatmulShape s;
  s.batch = batch_ * heads_;
  s.m = tokens_;
  s.n = n;
  s.k = k;
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.alpha = alpha;
  s.dtype = s.out_dtype = dtype_;
  return s;
}

void MultiheadSelfAttention::build(Backend& backend, int64_t batch) {
  batch_ = batch;
  const int64_t t = tokens_, c = channels_, bh = batch * heads_;
  in_proj_.build(backend, batch * t, c, 3 * c, true, dtype_);
  out_proj_.build(backend, batch * t, c, c, true, dtype_);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim_));
  scores_ = backend.make_matmul(product(false, true, t, dim_, scale));
  weighted_values_ = backend.make_matmul(product(false, false, dim_, t, 1.0f));
  grad_probs_ = backend.make_matmul(product(false, true, t, dim_, 1.0f));
  grad_v_ = backend.make_matmul(product(true, false, dim_, t, 1.0f));
  grad_q_ = backend.make_matmul(product(false, false, dim_, t, scale));
  grad_k_ = backend.make_matmul(product(true, false, dim_, t, scale));
  softmax_plan_ = kernels::plan_rows(bh * t, t);

  qkv_ = buffer({batch, t, 3 * c}, "qkv");
  heads_qkv_ = buffer({3, bh, t, dim_}, "heads_qkv");
  scores_buf_ = buffer({bh, t, t}, "scores");
  probs_ = buffer({bh, t, t}, "probs");
  if (dropout_ > 0.0f) {
    dropped_probs_ = buffer({bh, t, t}, "dropped_probs");
    mask_ = buffer({bh, t, t}, "mask", DType::u8);
    keys_.build(backend, stream(), batch, name_);
  }
  context_heads_ = buffer({bh, t, dim_}, "context_heads");
  context_ = buffer({batch, t, c}, "context");
  y_ = buffer({batch, t, c}, "y");
  dcontext_ = buffer({batch, t, c}, "dcontext");
  dcontext_heads_ = buffer({bh, t, dim_}, "dcontext_heads");
  dprobs_ = buffer({bh, t, t}, "dprobs");
  dscores_ = buffer({bh, t, t}, "dscores");
  dheads_qkv_ = buffer({3, bh, t, dim_}, "dheads_qkv");
  dqkv_ = buffer({batch, t, 3 * c}, "dqkv");
  dx_ = buffer({batch, t, c}, "dx");
}

void MultiheadSelfAttention::set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) {
  if (dropout_ > 0.0f) keys_.set(seed, step, sample_index);
}

// Token order [batch, tokens, parts, heads, dim] to head order [parts, batch, heads, tokens, dim], or back.
void MultiheadSelfAttention::launch_copy(const Tensor& from, Tensor& to, int64_t parts, bool to_heads) {
  const kernels::HeadLayout layout{batch_, tokens_, parts, heads_, dim_};
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    if (to_heads)
      launch(stream(), "attention_tokens_to_heads", layout.elements(),
             kernels::TokensToHeads<T>{from.device_data<T>(), to.device_data<T>(), layout});
    else
      launch(stream(), "attention_heads_to_tokens", layout.elements(),
             kernels::HeadsToTokens<T>{from.device_data<T>(), to.device_data<T>(), layout});
  });
}

const Tensor& MultiheadSelfAttention::forward(const Tensor& x, bool training) {
  x_ = x;
  const size_t esz = dtype_size(dtype_);
  const int64_t part = batch_ * heads_ * tokens_ * dim_;
  char* heads = static_cast<char*>(heads_qkv_.device_raw());
  const void *q = heads, *k = heads + part * esz, *v = heads + 2 * part * esz;
  in_proj_.forward(x.device_raw(), params_[0].compute_value.device_raw(), params_[1].value.device_data<float>(),
                   qkv_.device_raw());
  launch_copy(qkv_, heads_qkv_, 3, true);
  scores_->run(q, k, nullptr, scores_buf_.device_raw(), nullptr);
  dropped_ = training && dropout_ > 0.0f;
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    launch_row_reductions(stream(), "attention_softmax", softmax_plan_,
                          kernels::SoftmaxRowsForward<T>{scores_buf_.device_data<T>(), probs_.device_data<T>(), tokens_});
    if (dropped_)
      launch(stream(), "attention_dropout_forward", probs_.numel(),
             kernels::DropoutForward<T>{probs_.device_data<T>(), dropped_probs_.device_data<T>(),
                                        mask_.device_data<uint8_t>(), dropout_, keys_.seed(), keys_.step(),
                                        keys_.sample_index().device_data<int64_t>(), heads_ * tokens_ * tokens_});
  });
  const Tensor& p = dropped_ ? dropped_probs_ : probs_;
  weighted_values_->run(p.device_raw(), v, nullptr, context_heads_.device_raw(), nullptr);
  launch_copy(context_heads_, context_, 1, false);
  out_proj_.forward(context_.device_raw(), params_[2].compute_value.device_raw(),
                    params_[3].value.device_data<float>(), y_.device_raw());
  return y_;
}

const Tensor& MultiheadSelfAttention::backward(const Tensor& dy, bool need_dx) {
  const size_t esz = dtype_size(dtype_);
  const int64_t part = batch_ * heads_ * tokens_ * dim_;
  char* heads = static_cast<char*>(heads_qkv_.device_raw());
  char* dheads = static_cast<char*>(dheads_qkv_.device_raw());
  const void *q = heads, *k = heads + part * esz, *v = heads + 2 * part * esz;
  out_proj_.backward_weights(context_.device_raw(), dy.device_raw(), params_[2].grad.device_data<float>(),
                             params_[3].grad.device_data<float>());
  out_proj_.backward_data(dy.device_raw(), params_[2].compute_value.device_raw(), dcontext_.device_raw());
  launch_copy(dcontext_, dcontext_heads_, 1, true);
  const Tensor& p = dropped_ ? dropped_probs_ : probs_;
  grad_probs_->run(dcontext_heads_.device_raw(), v, nullptr, dprobs_.device_raw(), nullptr);
  grad_v_->run(p.device_raw(), dcontext_heads_.device_raw(), nullptr, dheads + 2 * part * esz, nullptr);
  visit_float_type(dtype_, [&](auto t) {
    using T = decltype(t);
    if (dropped_)
      launch(stream(), "attention_dropout_backward", dprobs_.numel(),
             kernels::DropoutBackward<T>{dprobs_.device_data<T>(), mask_.device_data<uint8_t>(),
                                         dprobs_.device_data<T>(), 1.0f / (1.0f - dropout_)});
    launch_row_reductions(stream(), "attention_softmax_backward", softmax_plan_,
                          kernels::SoftmaxRowsBackward<T>{probs_.device_data<T>(), dprobs_.device_data<T>(),
                                                          dscores_.device_data<T>(), tokens_});
  });
  grad_q_->run(dscores_.device_raw(), k, nullptr, dheads, nullptr);
  grad_k_->run(dscores_.device_raw(), q, nullptr, dheads + part * esz, nullptr);
  launch_copy(dheads_qkv_, dqkv_, 3, false);
  in_proj_.backward_weights(x_.device_raw(), dqkv_.device_raw(), params_[0].grad.device_data<float>(),
                            params_[1].grad.device_data<float>());
  if (!need_dx) return no_gradient();
  in_proj_.backward_data(dqkv_.device_raw(), params_[0].compute_value.device_raw(), dx_.device_raw());
  return dx_;
}

int64_t MultiheadSelfAttention::flops_per_sample() const {
  const int64_t t = tokens_, c = channels_;
  return 2 * t * c * 3 * c + 2 * 2 * t * t * c + 2 * t * c * c;
}

}  // namespace scaletrain::nn
