// Optimizer update functors with exactly torch.optim.SGD and torch.optim.AdamW semantics
// (i over parameters), in packs (kernels/packs.hpp), and MultiTensorUpdate, which runs one over every
// parameter range in one launch with the step's values from the device's step state
// (kernels/step_state.hpp), fp16's unscaling and the compute-type copy.
#pragma once
#include <cmath>
#include <cstdint>

#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/step_state.hpp"
#include "scaletrain/kernels/tensor_table.hpp"

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
  SgdUpdate at(int64_t offset) const {
    SgdUpdate u = *this;
    u.param += offset;
    u.grad += offset;
    if (u.momentum_buffer) u.momentum_buffer += offset;
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
  AdamWUpdate at(int64_t offset) const {
    AdamWUpdate u = *this;
    u.param += offset;
    u.grad += offset;
    u.exp_avg += offset;
    u.exp_avg_sq += offset;
    return u;
  }
};

// Where each weight-decay range of the flat parameters ends (exclusive, in order) and whether its
// tensors are decayed: the optimizer's device table.
struct UpdateRangeTable {
  const int64_t* ends;
  const int32_t* decayed;
  int64_t ranges;
  SCALETRAIN_HOST_DEVICE int64_t range_of(int64_t i) const { return first_end_past(ends, ranges, i); }
};

// An optimizer step over every parameter range in one launch: for each range, fp16's unscaling of
// the gradients (g *= 1 / the step's loss scale, stored back, as a pass of its own would), the update
// (SgdUpdate, AdamWUpdate over the whole buffer; the step's learning rate, bias corrections and
// first-update flag from the step state, the range's weight decay), then the compute-type copy
// (compute: bf16 or f16; null in f32). Nothing where the step is skipped. A device thread takes one
// element and finds its range in the table; the host runs each range as the update's own loops, so
// each element sees the operations of the separate passes, in their order.
template <class Update, class Compute>
struct MultiTensorUpdate {
  Update update;  // base pointers over the whole buffer; its step values and weight decay are replaced
  const StepState* state;
  UpdateRangeTable table;
  float weight_decay;  // of a decayed range
  bool unscale;
  Compute* compute;

  SCALETRAIN_HOST_DEVICE Update for_range(int64_t r) const {
    Update u = update.with_step(*state);
    u.weight_decay = table.decayed[r] ? weight_decay : 0.0f;
    return u;
  }
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    if (state->skip) return;
    if (unscale) Scale{const_cast<float*>(update.grad), state->unscale}(i);
    for_range(table.range_of(i))(i);
    if (compute) Cast<float, Compute>{update.param, compute}(i);
  }
  // The host's loops, range by range (kernels::launch_host).
  template <class Loop>
  void run_on_host(const Loop& loop) const {
    if (state->skip) return;
    int64_t begin = 0;
    for (int64_t r = 0; r < table.ranges; ++r) {
      const int64_t end = table.ends[r];
      if (unscale) loop(end - begin, Scale{const_cast<float*>(update.grad) + begin, state->unscale});
      loop(end - begin, for_range(r).at(begin));
      if (compute) loop(end - begin, Cast<float, Compute>{update.param + begin, compute + begin});
      begin = end;
    }
  }
};

}  // namespace scaletrain::kernels
