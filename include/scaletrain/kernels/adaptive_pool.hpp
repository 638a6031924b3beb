// Adaptive average pooling over NHWC data, as torch.nn.AdaptiveAvgPool2d: output cell (oh, ow) of an
// [H, W] input pooled to [OH, OW] averages rows [floor(oh H / OH), ceil((oh + 1) H / OH)) and the
// columns alike, so windows may differ in size and overlap (and repeat cells where OH > H).
// Forward: i over outputs. Backward: i over inputs, gathering from every window that holds the
// input (no atomics: deterministic).
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"

namespace scaletrain::kernels {

struct AdaptivePoolGeometry {
  int64_t h, w, c;       // input [n, h, w, c]
  int64_t out_h, out_w;  // output [n, out_h, out_w, c]
};

// The first input row (or column) of output o's window, and one past its last, for `in` inputs pooled to `out`.
SCALETRAIN_INLINE int64_t adaptive_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
SCALETRAIN_INLINE int64_t adaptive_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

template <class T>
struct AdaptivePoolForward {
  const T* x;
  T* y;
  AdaptivePoolGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t ow = (i / g.c) % g.out_w;
    const int64_t oh = (i / (g.c * g.out_w)) % g.out_h;
    const int64_t n = i / (g.c * g.out_w * g.out_h);
    const int64_t h0 = adaptive_start(oh, g.h, g.out_h), h1 = adaptive_end(oh, g.h, g.out_h);
    const int64_t w0 = adaptive_start(ow, g.w, g.out_w), w1 = adaptive_end(ow, g.w, g.out_w);
    float sum = 0.0f;
    for (int64_t ih = h0; ih < h1; ++ih)
      for (int64_t iw = w0; iw < w1; ++iw) sum += to_float(x[((n * g.h + ih) * g.w + iw) * g.c + ch]);
    y[i] = from_float<T>(sum / static_cast<float>((h1 - h0) * (w1 - w0)));
  }
};

// dx[i] = sum over the windows holding input i of dy / the window's size. The windows holding row ih
// are those of outputs floor(ih OH / H) to ceil((ih + 1) OH / H) - 1, each checked against its bounds.
template <class T>
struct AdaptivePoolBackward {
  const T* dy;
  T* dx;
  AdaptivePoolGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t iw = (i / g.c) % g.w;
    const int64_t ih = (i / (g.c * g.w)) % g.h;
    const int64_t n = i / (g.c * g.w * g.h);
    const int64_t oh0 = adaptive_start(ih, g.out_h, g.h), oh1 = adaptive_end(ih, g.out_h, g.h);
    const int64_t ow0 = adaptive_start(iw, g.out_w, g.w), ow1 = adaptive_end(iw, g.out_w, g.w);
    float sum = 0.0f;
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const int64_t h0 = adaptive_start(oh, g.h, g.out_h), h1 = adaptive_end(oh, g.h, g.out_h);
      if (ih < h0 || ih >= h1) continue;
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t w0 = adaptive_start(ow, g.w, g.out_w), w1 = adaptive_end(ow, g.w, g.out_w);
        if (iw < w0 || iw >= w1) continue;
        sum += to_float(dy[((n * g.out_h + oh) * g.out_w + ow) * g.c + ch]) / static_cast<float>((h1 - h0) * (w1 - w0));
      }
    }
    dx[i] = from_float<T>(sum);
  }
};

}  // namespace scaletrain::kernels
