// A direct convolution of the CPU backend with the layer's activation inside, as an ActivatedConvOp
// (the few-taps and the narrow-rows ops). Conv's forward applies the activation to each tile of output
// while it is in L1; a first layer's weight gradient takes the activation's gradient from y as it goes
// (Conv::backward_weights_from_output), so neither pre nor dpre goes to memory. With dx asked for (not
// a first layer), dpre is formed once in the caller's full-size scratch for both backward passes. A Conv
// that can run the max pooling after it (absorb_pool) does so where the layers ask (Model::build).
#pragma once
#include <cstdint>
#include <vector>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/backend/cpu/activation_loops.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

// Conv: constructed from (shape, activation); forward(x, w, b, y) writes y = act(conv(x, w) + b);
// backward_weights(x, dpre, dw, db), backward_data(dpre, w, dx), and
// backward_weights_from_output(x, y, dy, dw, db). One that can absorb a pooling also has
// absorb_pool(pool, pooled), backward_weights_from_pooled(x, dpooled, dw, db) and
// expand_pooled_gradient(dpooled, dpre).
template <class Conv>
class ActivatedDirectConv final : public ActivatedConvOp {
 public:
  ActivatedDirectConv(const ConvShape& s, Activation act)
      : conv_(s, act), act_(act), outputs_(s.batch * s.out_h() * s.out_w() * s.out_c) {}
  void forward(const void* x, const void* w, const float* b, void*, void* y) override { conv_.forward(x, w, b, y); }
  void backward(const void* x, const void*, const void* yv, const void* dyv, const void* w, void* dprev, float* dw,
                float* db, void* dx) override {
    const float* y = static_cast<const float*>(yv);
    const float* dy = static_cast<const float*>(dyv);
    if (pooling_absorbed_) return backward_under_pooling(static_cast<const float*>(x), dy, w, dw, db, dx);
    if (!dx) return conv_.backward_weights_from_output(static_cast<const float*>(x), y, dy, dw, db);
    float* dpre = static_cast<float*>(dprev);
    if (act_ != Activation::none) activate_backward_from_output(act_, y, dy, dpre, outputs_);
    const void* grad = act_ != Activation::none ? static_cast<const void*>(dpre) : dyv;
    conv_.backward_weights(x, grad, dw, db);
    conv_.backward_data(grad, w, dx);
  }
  bool absorb_pool(const PoolShape& pool, void* pooled) override {
    if constexpr (requires { conv_.absorb_pool(pool, pooled); }) pooling_absorbed_ = conv_.absorb_pool(pool, pooled);
    return pooling_absorbed_;
  }

 private:
  // dy: the gradient of the absorbed pooling's output. With dx asked for, every image's dpre is expanded
  // into a full-size buffer of the op's own (the caller's dpre is null without an activation).
  void backward_under_pooling(const float* x, const float* dy, const void* w, float* dw, float* db, void* dx) {
    if constexpr (requires { conv_.backward_weights_from_pooled(x, dy, dw, db); }) {
      if (!dx) return conv_.backward_weights_from_pooled(x, dy, dw, db);
      expanded_.resize(static_cast<size_t>(outputs_));
      conv_.expand_pooled_gradient(dy, expanded_.data());
      conv_.backward_weights(x, expanded_.data(), dw, db);
      conv_.backward_data(expanded_.data(), w, dx);
    }
  }

  Conv conv_;
  Activation act_;
  int64_t outputs_;
  bool pooling_absorbed_ = false;
  std::vector<float> expanded_;  // with a pooling absorbed and dx asked for: the full-size dpre
};

}  // namespace scaletrain::cpu
