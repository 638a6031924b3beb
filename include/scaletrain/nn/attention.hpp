// Multi-head self-attention over a sample's tokens [T, C], as torch.nn.MultiheadAttention(C, heads,
// batch_first=True) called with query = key = value: in_proj_weight [3C, C] and in_proj_bias [3C]
// project each token to q, k and v; each of the heads (dim D = C / heads) takes
// softmax(q k^T / sqrt(D)) v, the softmax in f32 on the per-row reductions, with attention dropout on
// its probabilities; out_proj (weight [C, C], bias [C]) maps the heads' outputs, side by side, back.
// The projections are linear maps over the batch's tokens (nn/linear_products.hpp); the products per
// head (two forward, four backward) are the backend's MatmulOp too, one strided-batched call over every
// (sample, head) pair. q, k and v are copied from token order into head order (each pair's matrix
// contiguous) rather than read through strided views: a product's batch can only step by one stride,
// and (sample, head) steps by two.
#pragma once
#include <memory>

#include "scaletrain/kernels/attention.hpp"
#include "scaletrain/nn/layer.hpp"
#include "scaletrain/nn/linear_products.hpp"
#include "scaletrain/nn/random_keys.hpp"

namespace scaletrain::nn {

class MultiheadSelfAttention : public Layer {
 public:
  MultiheadSelfAttention(std::string name, int64_t heads, float attention_dropout = 0.0f);
  std::string type() const override { return "MultiHeadAttention"; }
  Shape configure(const Shape& in) override;
  void build(Backend& backend, int64_t batch) override;
  const Tensor& forward(const Tensor& x, bool training) override;
  const Tensor& backward(const Tensor& dy, bool need_dx) override;
  int64_t flops_per_sample() const override;
  std::string implementation() const override { return scores_ ? scores_->implementation() : std::string(); }
  void set_random_state(uint64_t seed, const double* step, const Tensor& sample_index) override;

 private:
  MatmulShape product(bool trans_a, bool trans_b, int64_t n, int64_t k, float alpha) const;
  void launch_copy(const Tensor& from, Tensor& to, int64_t parts, bool to_heads);

  int64_t heads_, tokens_ = 0, channels_ = 0, dim_ = 0, batch_ = 0;
  float dropout_;
  bool dropped_ = false;  // the last forward applied attention dropout
  LinearProducts in_proj_, out_proj_;
  // scores = q k^T / sqrt(D); weighted_values (the context) = p v; backward: dp = dcontext v^T, dv = p^T dcontext,
  // dq = ds k / sqrt(D), dk = ds^T q / sqrt(D).
  std::unique_ptr<MatmulOp> scores_, weighted_values_, grad_probs_, grad_v_, grad_q_, grad_k_;
  kernels::RowsPlan softmax_plan_;
  Tensor x_, qkv_, heads_qkv_, scores_buf_, probs_, dropped_probs_, mask_, context_heads_, context_, y_;
  Tensor dcontext_, dcontext_heads_, dprobs_, dscores_, dheads_qkv_, dqkv_, dx_;
  RandomKeys keys_;  // attention dropout's
};

}  // namespace scaletrain::nn
