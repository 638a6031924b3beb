// A direct convolution of the CPU backend with the layer's activation inside, as an ActivatedConvOp
// (the few-taps and the narrow-rows ops). Conv's forward applies the activation to each tile of output
// while it is in L1; a first layer's weight gradient takes the activation's gradient from y as it goes
// (Conv::backward_weights_from_output), so neither pre nor dpre goes to memory. With dx asked for (not
// a first layer), dpre is formed once in the caller's full-size scratch for both backward passes.
#pragma once
#include <cstdint>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/backend/cpu/activation_loops.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

// Conv: constructed from (shape, activation); forward(x, w, b, y) writes y = act(conv(x, w) + b);
// backward_weights(x, dpre, dw, db), backward_data(dpre, w, dx), and
// backward_weights_from_output(x, y, dy, dw, db).
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
    if (!dx) return conv_.backward_weights_from_output(static_cast<const float*>(x), y, dy, dw, db);
    float* dpre = static_cast<float*>(dprev);
    if (act_ != Activation::none) activate_backward_from_output(act_, y, dy, dpre, outputs_);
    const void* grad = act_ != Activation::none ? static_cast<const void*>(dpre) : dyv;
    conv_.backward_weights(x, grad, dw, db);
    conv_.backward_data(grad, w, dx);
  }

 private:
  Conv conv_;
  Activation act_;
  int64_t outputs_;
};

}  // namespace scaletrain::cpu
