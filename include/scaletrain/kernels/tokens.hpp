// Token tensors [batch, tokens, channels]: a learned token put before a sample's tokens (the ViT's class
// token) and its gradient's copy back, a learned per-position embedding added, and one token taken out
// (the class token before the head). T is the storage type; the learned values are the f32 master
// parameters, added in f32 before the one rounding to T.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

// i over y [batch, tokens + 1, channels]: token 0 is `token`, token t + 1 is x's token t.
template <class T>
struct PrependToken {
  const T* x;
  const float* token;
  T* y;
  int64_t tokens, channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t per = (tokens + 1) * channels;
    const int64_t b = i / per, rem = i - b * per;
    y[i] = rem < channels ? from_float<T>(token[rem]) : x[b * tokens * channels + rem - channels];
  }
};

// i over dx [batch, tokens, channels]: dy's tokens after the first.
template <class T>
struct DropFirstToken {
  const T* dy;
  T* dx;
  int64_t tokens, channels;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t per = tokens * channels;
    const int64_t b = i / per;
    dx[i] = dy[b * (per + channels) + channels + (i - b * per)];
  }
};

// i over [batch, per_sample]: y = x + positions (one sample's worth, f32).
template <class T>
struct AddPositions {
  const T* x;
  const float* positions;
  T* y;
  int64_t per_sample;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    y[i] = from_float<T>(to_float(x[i]) + positions[i % per_sample]);
  }
};

// i over y [batch, channels]: token `index` of x [batch, tokens, channels].
template <class T>
struct SelectToken {
  const T* x;
  T* y;
  int64_t tokens, channels, index;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t b = i / channels;
    y[i] = x[(b * tokens + index) * channels + (i - b * channels)];
  }
};

// i over dx [batch, tokens, channels]: dy at token `index`, zero elsewhere.
template <class T>
struct SelectTokenBackward {
  const T* dy;
  T* dx;
  int64_t tokens, channels, index;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t per = tokens * channels;
    const int64_t b = i / per, rem = i - b * per;
    const int64_t t = rem / channels;
    dx[i] = t == index ? dy[b * channels + (rem - t * channels)] : from_float<T>(0.0f);
  }
};

}  // namespace scaletrain::kernels
