// Direct max and average pooling over NHWC data with any (also asymmetric) padding: padding never
// wins a maximum and is left out of an average's divisor, or counted in it with count_include_pad
// (the whole window: without ceil_mode no window reaches past the padded input). The CUDA backend runs these where
// cuDNN's symmetric pooling descriptor cannot express the padding (TensorFlow 'same' on an odd input). Forward: i over
// outputs. Backward: i over inputs, gathering from every window that holds the input (no atomics, so the result is
// deterministic). The maximum of a window is its first largest cell in row-major window order, or a NaN when the window
// holds one (NaN propagates, as with CUDNN_PROPAGATE_NAN); max backward recomputes it from x.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

struct PoolGeometry {
  int64_t h, w, c;       // input [n, h, w, c]
  int64_t out_h, out_w;  // output [n, out_h, out_w, c]
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_top, pad_left;  // the bottom/right padding only shows in out_h/out_w
  bool count_include_pad;
};

// The window of output (oh, ow) clipped to the input: rows [h0, h1), columns [w0, w1).
struct PoolWindow {
  int64_t h0, h1, w0, w1;
};

SCALETRAIN_INLINE PoolWindow pool_window(const PoolGeometry& g, int64_t oh, int64_t ow) {
  const int64_t hs = oh * g.stride_h - g.pad_top, ws = ow * g.stride_w - g.pad_left;
  PoolWindow r;
  r.h0 = hs < 0 ? 0 : hs;
  r.w0 = ws < 0 ? 0 : ws;
  r.h1 = hs + g.kernel_h < g.h ? hs + g.kernel_h : g.h;
  r.w1 = ws + g.kernel_w < g.w ? ws + g.kernel_w : g.w;
  return r;
}

// An average's divisor for a window, `win` its part inside the input.
SCALETRAIN_INLINE float pool_divisor(const PoolGeometry& g, const PoolWindow& win) {
  if (g.count_include_pad) return static_cast<float>(g.kernel_h * g.kernel_w);
  return static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
}

// The flat index of the first largest cell of window (oh, ow) of image n, channel ch.
template <class T>
SCALETRAIN_INLINE int64_t pool_argmax(const T* x, const PoolGeometry& g, int64_t n, int64_t oh, int64_t ow,
                                      int64_t ch) {
  const PoolWindow win = pool_window(g, oh, ow);
  int64_t best = ((n * g.h + win.h0) * g.w + win.w0) * g.c + ch;
  float best_v = to_float(x[best]);
  for (int64_t ih = win.h0; ih < win.h1; ++ih)
    for (int64_t iw = win.w0; iw < win.w1; ++iw) {
      const int64_t xi = ((n * g.h + ih) * g.w + iw) * g.c + ch;
      const float v = to_float(x[xi]);
      if (v > best_v || (v != v && best_v == best_v)) {  // v != v: NaN
        best_v = v;
        best = xi;
      }
    }
  return best;
}

template <class T>
struct PoolForwardDirect {
  const T* x;
  T* y;
  PoolGeometry g;
  bool max;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t ow = (i / g.c) % g.out_w;
    const int64_t oh = (i / (g.c * g.out_w)) % g.out_h;
    const int64_t n = i / (g.c * g.out_w * g.out_h);
    if (max) {
      y[i] = x[pool_argmax(x, g, n, oh, ow, ch)];
      return;
    }
    const PoolWindow win = pool_window(g, oh, ow);
    float sum = 0.0f;
    for (int64_t ih = win.h0; ih < win.h1; ++ih)
      for (int64_t iw = win.w0; iw < win.w1; ++iw) sum += to_float(x[((n * g.h + ih) * g.w + iw) * g.c + ch]);
    y[i] = from_float<T>(sum / pool_divisor(g, win));
  }
};

// dx[i] = sum over the windows holding input i of (max: dy if i is the window's maximum; average:
// dy / the window's divisor). x is only read for max pooling.
template <class T>
struct PoolBackwardDirect {
  const T* x;
  const T* dy;
  T* dx;
  PoolGeometry g;
  bool max;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t iw = (i / g.c) % g.w;
    const int64_t ih = (i / (g.c * g.w)) % g.h;
    const int64_t n = i / (g.c * g.w * g.h);
    // Outputs whose window holds row ih: oh * stride - pad_top <= ih < oh * stride - pad_top + kernel.
    const int64_t ph = ih + g.pad_top, pw = iw + g.pad_left;
    const int64_t oh0 = ph < g.kernel_h ? 0 : (ph - g.kernel_h) / g.stride_h + 1;
    const int64_t ow0 = pw < g.kernel_w ? 0 : (pw - g.kernel_w) / g.stride_w + 1;
    const int64_t oh1 = ph / g.stride_h + 1 < g.out_h ? ph / g.stride_h + 1 : g.out_h;
    const int64_t ow1 = pw / g.stride_w + 1 < g.out_w ? pw / g.stride_w + 1 : g.out_w;
    float sum = 0.0f;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t yi = ((n * g.out_h + oh) * g.out_w + ow) * g.c + ch;
        if (max) {
          if (pool_argmax(x, g, n, oh, ow, ch) == i) sum += to_float(dy[yi]);
        } else {
          sum += to_float(dy[yi]) / pool_divisor(g, pool_window(g, oh, ow));
        }
      }
    dx[i] = from_float<T>(sum);
  }
};

}  // namespace scaletrain::kernels
