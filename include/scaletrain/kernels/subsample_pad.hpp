// The option-A shortcut of CIFAR ResNets (nn/subsample_pad.hpp): every stride-th position in H and W,
// with zero channels before and after the input's, and its gradient. NHWC; T is the storage type
// (float, bf16, f16); values are copied, never rounded.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"

namespace scaletrain::kernels {

// The input [batch, in_h, in_w, in_c] and output [batch, out_h, out_w, in_c + pad_before + pad_after]
// of one subsampling; out_h = ceil(in_h / stride), out_w likewise.
struct SubsamplePadGeometry {
  int64_t in_h, in_w, in_c;
  int64_t out_h, out_w, out_c;
  int64_t stride, pad_before;
};

// p over the output's pixels (batch * out_h * out_w), channels innermost:
// y[n, oh, ow, c] = x[n, oh * stride, ow * stride, c - pad_before], 0 in the padding.
template <class T>
struct SubsamplePadForward {
  const T* x;
  T* y;
  SubsamplePadGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t ow = p % g.out_w, oh = (p / g.out_w) % g.out_h, n = p / (g.out_w * g.out_h);
    const T* xp = x + ((n * g.in_h + oh * g.stride) * g.in_w + ow * g.stride) * g.in_c;
    T* yp = y + p * g.out_c;
    for (int64_t c = 0; c < g.pad_before; ++c) yp[c] = from_float<T>(0.0f);
    for (int64_t c = 0; c < g.in_c; ++c) yp[g.pad_before + c] = xp[c];
    for (int64_t c = g.pad_before + g.in_c; c < g.out_c; ++c) yp[c] = from_float<T>(0.0f);
  }
};

// p over the input gradient's pixels (batch * in_h * in_w), channels innermost: dx[n, h, w, c] =
// dy[n, h / stride, w / stride, c + pad_before] where h and w are multiples of the stride (the positions
// forward kept), 0 elsewhere.
template <class T>
struct SubsamplePadBackward {
  const T* dy;
  T* dx;
  SubsamplePadGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t p) const {
    const int64_t w = p % g.in_w, h = (p / g.in_w) % g.in_h, n = p / (g.in_w * g.in_h);
    T* dxp = dx + p * g.in_c;
    if (h % g.stride != 0 || w % g.stride != 0) {
      for (int64_t c = 0; c < g.in_c; ++c) dxp[c] = from_float<T>(0.0f);
      return;
    }
    const T* dyp = dy + ((n * g.out_h + h / g.stride) * g.out_w + w / g.stride) * g.out_c + g.pad_before;
    for (int64_t c = 0; c < g.in_c; ++c) dxp[c] = dyp[c];
  }
};

}  // namespace scaletrain::kernels
