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

// i over the output: y[n, oh, ow, c] = x[n, oh * stride, ow * stride, c - pad_before], 0 in the padding.
template <class T>
struct SubsamplePadForward {
  const T* x;
  T* y;
  SubsamplePadGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t c = i % g.out_c;
    const int64_t ow = (i / g.out_c) % g.out_w;
    const int64_t oh = (i / (g.out_c * g.out_w)) % g.out_h;
    const int64_t n = i / (g.out_c * g.out_w * g.out_h);
    const int64_t ic = c - g.pad_before;
    if (ic < 0 || ic >= g.in_c) {
      y[i] = from_float<T>(0.0f);
      return;
    }
    y[i] = x[((n * g.in_h + oh * g.stride) * g.in_w + ow * g.stride) * g.in_c + ic];
  }
};

// i over the input gradient: dx[n, h, w, c] = dy[n, h / stride, w / stride, c + pad_before] where h and
// w are multiples of the stride (the positions forward kept), 0 elsewhere.
template <class T>
struct SubsamplePadBackward {
  const T* dy;
  T* dx;
  SubsamplePadGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t c = i % g.in_c;
    const int64_t w = (i / g.in_c) % g.in_w;
    const int64_t h = (i / (g.in_c * g.in_w)) % g.in_h;
    const int64_t n = i / (g.in_c * g.in_w * g.in_h);
    if (h % g.stride != 0 || w % g.stride != 0) {
      dx[i] = from_float<T>(0.0f);
      return;
    }
    dx[i] = dy[((n * g.out_h + h / g.stride) * g.out_w + w / g.stride) * g.out_c + c + g.pad_before];
  }
};

}  // namespace scaletrain::kernels
