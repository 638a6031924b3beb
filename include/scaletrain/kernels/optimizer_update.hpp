// Optimizer update functors with exactly torch.optim.SGD and torch.optim.AdamW semantics
// (i over parameters), in packs (kernels/packs.hpp), and StepUpdate, which gives one the step's
// learning rate, bias corrections and skip from the device's step state (kernels/step_state.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/step_state.hpp"

namespace scaletrain::kernels {

struct SgdUpdate {
  float* param;
  const float* grad;
  float* momentum_buffer;  // null when momentum == 0
  float lr;
  float momentum;
  float dampening;
  float weight_decay;
  bool nesterov;
  bool first_step;
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float p[N], g[N], b[N] = {};
    load_pack<float, N>(param + i, p);
    load_pack<float, N>(grad + i, g);
    if (momentum != 0.0f && !first_step) load_pack<float, N>(momentum_buffer + i, b);
    each_in_pack<N>([&](int k) {
      if (weight_decay != 0.0f) g[k] += weight_decay * p[k];
      if (momentum != 0.0f) {
        b[k] = first_step ? g[k] : momentum * b[k] + (1.0f - dampening) * g[k];
        g[k] = nesterov ? g[k] + momentum * b[k] : b[k];
      }
      p[k] -= lr * g[k];
    });
    if (momentum != 0.0f) store_pack<float, N>(momentum_buffer + i, b);
    store_pack<float, N>(param + i, p);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return pack_aligned(param) && pack_aligned(grad) && pack_aligned(momentum_buffer); }
  SCALETRAIN_HOST_DEVICE SgdUpdate with_step(const StepState& s) const {
    SgdUpdate u = *this;
    u.lr = s.lr;
    u.first_step = s.first_update != 0;
    return u;
  }
};

struct AdamWUpdate {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float lr;
  float beta1;
  float beta2;
  float eps;
  float weight_decay;
  float bias_correction1;  // 1 - beta1^t
  float bias_correction2;  // 1 - beta2^t
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    float p[N], g[N], m[N], v[N];
    load_pack<float, N>(param + i, p);
    load_pack<float, N>(grad + i, g);
    load_pack<float, N>(exp_avg + i, m);
    load_pack<float, N>(exp_avg_sq + i, v);
    each_in_pack<N>([&](int k) {
      p[k] *= 1.0f - lr * weight_decay;
      m[k] = beta1 * m[k] + (1.0f - beta1) * g[k];
      v[k] = beta2 * v[k] + (1.0f - beta2) * g[k] * g[k];
      const float denom = sqrtf(v[k]) / sqrtf(bias_correction2) + eps;
      p[k] -= (lr / bias_correction1) * m[k] / denom;
    });
    store_pack<float, N>(exp_avg + i, m);
    store_pack<float, N>(exp_avg_sq + i, v);
    store_pack<float, N>(param + i, p);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const {
    return pack_aligned(param) && pack_aligned(grad) && pack_aligned(exp_avg) && pack_aligned(exp_avg_sq);
  }
  SCALETRAIN_HOST_DEVICE AdamWUpdate with_step(const StepState& s) const {
    AdamWUpdate u = *this;
    u.lr = s.lr;
    u.bias_correction1 = s.bias_correction1;
    u.bias_correction2 = s.bias_correction2;
    return u;
  }
};

// An update (SgdUpdate, AdamWUpdate) whose per-step values come from the step state in device
// memory, and which writes nothing where the step is skipped. A device thread reads the state; the
// host binds it once per launch (kernels::launch_host), so its loop is the update's own.
template <class Update>
struct StepUpdate {
  Update update;  // its step values are replaced by the state's
  const StepState* state;
  SCALETRAIN_HOST_DEVICE bool skipped() const { return state->skip != 0; }
  SCALETRAIN_HOST_DEVICE Update bound() const { return update.with_step(*state); }
  template <int N>
  SCALETRAIN_INLINE void pack(int64_t i) const {
    if (!skipped()) bound().template pack<N>(i);
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const { pack<1>(i); }
  bool packs_fit() const { return update.packs_fit(); }
};

}  // namespace scaletrain::kernels
