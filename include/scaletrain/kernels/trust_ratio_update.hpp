// The layer-wise adaptive updates for large batches, per parameter tensor: LARS (You, Gitman and
// Ginsburg 2017, with momentum as MLPerf's ResNet-50 reference runs it) and LAMB (You et al. 2019,
// Algorithm 2, bias-corrected). Each tensor's trust ratio comes from the norms of its weights and of
// its gradient (LARS) or update (LAMB), summed per tensor by the segment sums (kernels/segment_sums.hpp)
// (sink StoreDouble) into a buffer [sum w^2 per tensor | sum g^2 or u^2 per tensor]. A tensor table says where
// each tensor ends and whether it is adapted (trust ratio) and decayed (weight decay); an excluded
// tensor (a bias, a normalization parameter) takes neither, as MLPerf's reference. The step's values
// (learning rate, bias corrections, skip, fp16's unscaling factor) come from the device's step state.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/reduction.hpp"
#include "scaletrain/kernels/step_state.hpp"

namespace scaletrain::kernels {

// Where each parameter tensor ends in the flat buffer (exclusive, in order) and its flags.
struct TensorTable {
  static constexpr int32_t kAdapted = 1;  // the trust ratio scales its update
  static constexpr int32_t kDecayed = 2;  // weight decay applies
  const int64_t* ends;
  const int32_t* flags;
  int64_t tensors;
  SCALETRAIN_HOST_DEVICE int64_t tensor_of(int64_t i) const { return first_end_past(ends, tensors, i); }
  SCALETRAIN_HOST_DEVICE bool adapted(int64_t t) const { return (flags[t] & kAdapted) != 0; }
  SCALETRAIN_HOST_DEVICE bool decayed(int64_t t) const { return (flags[t] & kDecayed) != 0; }
};

// ||w|| / ||d|| from their squared sums where both are positive, else 1 (both papers' guard).
SCALETRAIN_HOST_DEVICE inline float trust_ratio(double w2, double d2) {
  if (!(w2 > 0.0) || !(d2 > 0.0)) return 1.0f;
  return static_cast<float>(sqrt(w2)) / static_cast<float>(sqrt(d2));
}

// LARS' source: w^2 and g^2 (g unscaled where fp16's gradients carry the loss scale).
struct LarsSquares {
  static constexpr int kWidth = 2;
  const float* param;
  const float* grad;
  const StepState* state;
  bool unscale;
  SCALETRAIN_HOST_DEVICE void load(int64_t i, int64_t, float* v) const {
    const float g = unscale ? grad[i] * state->unscale : grad[i];
    v[0] = param[i] * param[i];
    v[1] = g * g;
  }
};

// LARS on one tensor's elements with its local learning rate (lr x the trust ratio, or lr):
// v = momentum v + local_lr (g + wd w); w -= v. The momentum buffer starts at zero.
struct LarsElements {
  float* param;
  const float* grad;
  float* velocity;
  float local_lr;
  float momentum;
  float weight_decay;
  float unscale;  // 1 unless fp16
  bool first;     // the first update: the buffer holds no velocity yet
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const float g = grad[i] * unscale;
    const float v = (first ? 0.0f : momentum * velocity[i]) + local_lr * (g + weight_decay * param[i]);
    velocity[i] = v;
    param[i] -= v;
  }
};

// The trust ratio of LARS: eta ||w|| / (||g|| + wd ||w||), 1 where a norm is 0.
SCALETRAIN_HOST_DEVICE inline float lars_trust(double w2, double g2, float eta, float weight_decay) {
  if (!(w2 > 0.0) || !(g2 > 0.0)) return 1.0f;
  const float w = static_cast<float>(sqrt(w2));
  return eta * w / (static_cast<float>(sqrt(g2)) + weight_decay * w);
}

// LARS over every tensor in one launch: the tensor's local rate from the norms, then LarsElements,
// then the compute-type copy (Compute: bf16, f16; null in f32). Nothing where the step is skipped.
// The host runs each tensor as one loop with its factors computed once.
template <class Compute>
struct LarsUpdate {
  float* param;
  const float* grad;
  float* velocity;
  const double* squares;  // [tensors w^2 | tensors g^2]
  TensorTable table;
  const StepState* state;
  float momentum, weight_decay, eta;
  bool unscale;
  Compute* compute;

  SCALETRAIN_HOST_DEVICE LarsElements for_tensor(int64_t t) const {
    const float wd = table.decayed(t) ? weight_decay : 0.0f;
    const float trust = table.adapted(t) ? lars_trust(squares[t], squares[table.tensors + t], eta, wd) : 1.0f;
    return LarsElements{param, grad, velocity, state->lr * trust, momentum, wd, unscale ? state->unscale : 1.0f,
                        state->first_update != 0};
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    if (state->skip) return;
    for_tensor(table.tensor_of(i))(i);
    if (compute) Cast<float, Compute>{param, compute}(i);
  }
  template <class Loop>
  void run_on_host(const Loop& loop) const {
    if (state->skip) return;
    int64_t begin = 0;
    for (int64_t t = 0; t < table.tensors; ++t) {
      const int64_t end = table.ends[t];
      LarsElements e = for_tensor(t);
      e.param += begin;
      e.grad += begin;
      e.velocity += begin;
      loop(end - begin, e);
      if (compute) loop(end - begin, Cast<float, Compute>{param + begin, compute + begin});
      begin = end;
    }
  }
};

// LAMB's first pass, element-wise: the moments m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2
// (g unscaled in fp16). Nothing where the step is skipped.
struct LambMoments {
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  const StepState* state;
  float beta1, beta2;
  bool unscale;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    if (state->skip) return;
    const float g = unscale ? grad[i] * state->unscale : grad[i];
    exp_avg[i] = beta1 * exp_avg[i] + (1.0f - beta1) * g;
    exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1.0f - beta2) * g * g;
  }
};

// LAMB's update direction of element i: m^ / (sqrt(v^) + eps) with the bias-corrected moments,
// plus wd w on a decayed tensor.
struct LambDirection {
  const float* param;
  const float* exp_avg;
  const float* exp_avg_sq;
  const StepState* state;
  float eps;
  SCALETRAIN_HOST_DEVICE float operator()(int64_t i, float weight_decay) const {
    const float m = exp_avg[i] / state->bias_correction1;
    const float v = exp_avg_sq[i] / state->bias_correction2;
    return m / (sqrtf(v) + eps) + weight_decay * param[i];
  }
};

// LAMB's second pass: w^2 and u^2, u the direction.
struct LambSquares {
  static constexpr int kWidth = 2;
  LambDirection direction;
  TensorTable table;
  float weight_decay;
  SCALETRAIN_HOST_DEVICE void load(int64_t i, int64_t tensor, float* v) const {
    const float u = direction(i, table.decayed(tensor) ? weight_decay : 0.0f);
    v[0] = direction.param[i] * direction.param[i];
    v[1] = u * u;
  }
};

// LAMB's last pass over every tensor: w -= lr x trust x u (trust ||w|| / ||u||, 1 where excluded or a
// norm is 0), then the compute-type copy. Nothing where the step is skipped.
template <class Compute>
struct LambUpdate {
  float* param;
  LambDirection direction;
  const double* squares;  // [tensors w^2 | tensors u^2]
  TensorTable table;
  float weight_decay;
  Compute* compute;

  SCALETRAIN_HOST_DEVICE float rate(int64_t t) const {
    const float trust = table.adapted(t) ? trust_ratio(squares[t], squares[table.tensors + t]) : 1.0f;
    return direction.state->lr * trust;
  }
  SCALETRAIN_HOST_DEVICE void element(int64_t i, float rate, float wd) const {
    param[i] -= rate * direction(i, wd);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    if (direction.state->skip) return;
    const int64_t t = table.tensor_of(i);
    element(i, rate(t), table.decayed(t) ? weight_decay : 0.0f);
    if (compute) Cast<float, Compute>{param, compute}(i);
  }
  // One tensor's elements at its rate and decay (the host's loop body).
  struct TensorLoop {
    const LambUpdate* self;
    int64_t begin;
    float rate, wd;
    void operator()(int64_t i) const { self->element(begin + i, rate, wd); }
  };
  template <class Loop>
  void run_on_host(const Loop& loop) const {
    if (direction.state->skip) return;
    int64_t begin = 0;
    for (int64_t t = 0; t < table.tensors; ++t) {
      const int64_t end = table.ends[t];
      loop(end - begin, TensorLoop{this, begin, rate(t), table.decayed(t) ? weight_decay : 0.0f});
      if (compute) loop(end - begin, Cast<float, Compute>{param + begin, compute + begin});
      begin = end;
    }
  }
};

}  // namespace scaletrain::kernels
