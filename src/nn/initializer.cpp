// Deterministic parameter initialization and the buffers' initial values (Keras' glorot_uniform, lecun_normal; He's uniform and
// normal; PyTorch's default) from a counter-based generator, so every rank draws identical weights from one seed.
#include <cmath>

#include "scaletrain/kernels/random.hpp"
#include "scaletrain/nn/model.hpp"

namespace scaletrain::nn {
namespace {

// Standard normal truncated at two standard deviations (Keras' truncated_normal), by redrawing.
float truncated_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  for (uint64_t k = 0;; ++k) {
    const uint64_t base = (index * 64 + k) * 2;
    const float u1 = kernels::uniform01(seed, stream, base);
    const float u2 = kernels::uniform01(seed, stream, base + 1);
    const float r = std::sqrt(-2.0f * std::log(1.0f - u1));
    const float z = r * std::cos(6.283185307179586f * u2);
    if (std::fabs(z) <= 2.0f) return z;
  }
}

// Standard normal (Box-Muller on two counter-based uniforms).
float standard_normal(uint64_t seed, uint64_t stream, uint64_t index) {
  const float u1 = kernels::uniform01(seed, stream, 2 * index);
  const float u2 = kernels::uniform01(seed, stream, 2 * index + 1);
  return std::sqrt(-2.0f * std::log(1.0f - u1)) * std::cos(6.283185307179586f * u2);
}

}  // namespace

void Model::init_parameters(uint64_t seed) {
  ST_CHECK(configured_, "model '", name_, "': configure() before init_parameters()");
  // Drawn on the host, then copied to the device when the parameters live there.
  Tensor host = flat_params_.on_host() ? flat_params_ : Tensor(flat_params_.shape(), DType::f32, name_ + ".init");
  for (size_t s = 0; s < slots_.size(); ++s) {
    Parameter& p = layers_[slots_[s].layer]->parameters()[slots_[s].index];
    float* w = host.data<float>() + slots_[s].offset;
    const int64_t n = p.value.numel();
    const double fan_in = static_cast<double>(std::max<int64_t>(p.fan_in, 1));
    const double fan_out = static_cast<double>(std::max<int64_t>(p.fan_out, 1));
    const uint64_t stream = s + 1;
    switch (p.init) {
      case Init::zeros:
        for (int64_t i = 0; i < n; ++i) w[i] = 0.0f;
        break;
      case Init::ones:
        for (int64_t i = 0; i < n; ++i) w[i] = 1.0f;
        break;
      case Init::he_normal_fan_out: {
        const float sd = static_cast<float>(std::sqrt(2.0 / fan_out));
        for (int64_t i = 0; i < n; ++i) w[i] = standard_normal(seed, stream, static_cast<uint64_t>(i)) * sd;
        break;
      }
      case Init::normal_001:
        for (int64_t i = 0; i < n; ++i) w[i] = standard_normal(seed, stream, static_cast<uint64_t>(i)) * 0.01f;
        break;
      case Init::normal_002:
        for (int64_t i = 0; i < n; ++i) w[i] = standard_normal(seed, stream, static_cast<uint64_t>(i)) * 0.02f;
        break;
      case Init::glorot_uniform: {
        const float limit = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
        for (int64_t i = 0; i < n; ++i) w[i] = (2.0f * kernels::uniform01(seed, stream, i) - 1.0f) * limit;
        break;
      }
      case Init::he_uniform: {
        const float limit = static_cast<float>(std::sqrt(6.0 / fan_in));
        for (int64_t i = 0; i < n; ++i) w[i] = (2.0f * kernels::uniform01(seed, stream, i) - 1.0f) * limit;
        break;
      }
      case Init::pytorch_default: {
        const float limit = static_cast<float>(1.0 / std::sqrt(fan_in));
        for (int64_t i = 0; i < n; ++i) w[i] = (2.0f * kernels::uniform01(seed, stream, i) - 1.0f) * limit;
        break;
      }
      case Init::lecun_normal: {
        // Keras: truncated normal with stddev sqrt(1 / fan_in) / 0.87962566 (the truncation's variance).
        const float sd = static_cast<float>(std::sqrt(1.0 / fan_in) / 0.87962566103423978);
        for (int64_t i = 0; i < n; ++i) w[i] = truncated_normal(seed, stream, static_cast<uint64_t>(i)) * sd;
        break;
      }
    }
  }
  if (!flat_params_.on_host()) backend_->copy_async(backend_->compute_stream(), flat_params_, host);
  refresh_compute_parameters();
  init_buffers();
}

void Model::init_buffers() {
  for (DType type : {DType::f32, DType::i64}) {
    Tensor& flat = flat_buffers(type);
    if (!flat.defined()) continue;
    Tensor host = flat.on_host() ? flat : Tensor(flat.shape(), type, name_ + ".buffers.init");
    for (const BufferSlot& b : buffer_slots_) {
      if (b.dtype != type) continue;
      const double v = layers_[b.layer]->buffers()[b.index].initial;
      for (int64_t i = 0; i < b.count; ++i) {
        if (type == DType::i64) host.data<int64_t>()[b.offset + i] = static_cast<int64_t>(v);
        else host.data<float>()[b.offset + i] = static_cast<float>(v);
      }
    }
    if (!flat.on_host()) backend_->copy_async(backend_->compute_stream(), flat, host);
  }
}

}  // namespace scaletrain::nn
