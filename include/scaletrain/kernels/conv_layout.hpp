// Layout functors around the CUDA backend's cuDNN convolutions and pooling: explicit NHWC padding
// and cropping (the asymmetric part of a padding that cuDNN's symmetric descriptors cannot express)
// and the OIHW <-> OHWI filter reorders with a storage cast (cuDNN gets its filters channels-last,
// like the activations), and the copy of every convolution's filters in OHWI from the f32 master
// weights in one launch. Templated over the storage types, float arithmetic; pure copies are exact.
#pragma once
#include <cstdint>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/macros.hpp"
#include "scaletrain/kernels/tensor_table.hpp"

namespace scaletrain::kernels {

// An NHWC image [n, h, w, c] placed inside a larger one [n, h + top + bottom, w + left + right, c].
struct NhwcPadGeometry {
  int64_t h, w, c;             // the inner (unpadded) image
  int64_t padded_h, padded_w;  // the outer image
  int64_t top, left;           // where the inner image starts in the outer one
};

// i over all elements of the padded image: xp = x inside, `fill` outside (0 for a convolution).
template <class T>
struct PadNhwc {
  const T* x;
  T* xp;
  NhwcPadGeometry g;
  float fill;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t pw = (i / g.c) % g.padded_w;
    const int64_t ph = (i / (g.c * g.padded_w)) % g.padded_h;
    const int64_t n = i / (g.c * g.padded_w * g.padded_h);
    const int64_t ih = ph - g.top, iw = pw - g.left;
    if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) {
      xp[i] = from_float<T>(fill);
      return;
    }
    xp[i] = x[((n * g.h + ih) * g.w + iw) * g.c + ch];
  }
};

// i over all elements of the inner image: x = the inner part of xp (the gradient of a padded input
// cropped to the input; what fell on padding is dropped).
template <class T>
struct CropNhwc {
  const T* xp;
  T* x;
  NhwcPadGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t ch = i % g.c;
    const int64_t iw = (i / g.c) % g.w;
    const int64_t ih = (i / (g.c * g.w)) % g.h;
    const int64_t n = i / (g.c * g.w * g.h);
    x[i] = xp[((n * g.padded_h + ih + g.top) * g.padded_w + iw + g.left) * g.c + ch];
  }
};

// A convolution filter of out_c filters, each in_c (per group) x kh x kw.
struct FilterGeometry {
  int64_t out_c, in_c, kh, kw;
};

// i over the OHWI destination: dst[o, h, w, c] = src[o, c, h, w] (PyTorch's layout to channels-last).
template <class From, class To>
struct FilterOihwToOhwi {
  const From* src;
  To* dst;
  FilterGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t c = i % g.in_c;
    const int64_t w = (i / g.in_c) % g.kw;
    const int64_t h = (i / (g.in_c * g.kw)) % g.kh;
    const int64_t o = i / (g.in_c * g.kw * g.kh);
    dst[i] = from_float<To>(to_float(src[((o * g.in_c + c) * g.kh + h) * g.kw + w]));
  }
};

// i over the OIHW destination: dst[o, c, h, w] = src[o, h, w, c] (a channels-last weight gradient
// back to PyTorch's layout, and to f32).
template <class From, class To>
struct FilterOhwiToOihw {
  const From* src;
  To* dst;
  FilterGeometry g;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t w = i % g.kw;
    const int64_t h = (i / g.kw) % g.kh;
    const int64_t c = (i / (g.kw * g.kh)) % g.in_c;
    const int64_t o = i / (g.kw * g.kh * g.in_c);
    dst[i] = from_float<To>(to_float(src[((o * g.kh + h) * g.kw + w) * g.in_c + c]));
  }
};

// One row of the laid-out filters' device table: where the filter's f32 master weights start in the
// flat parameters, and its OIHW geometry. Stored as kLaidOutFilterFields int64 values.
inline constexpr int64_t kLaidOutFilterFields = 5;  // source, out_c, in_c, kh, kw

// One filter's OHWI copy by rows: r over its [O, KH, KW] rows, each of in_c values read kh * kw apart
// from the OIHW master weights (the host's loops of MasterFiltersToOhwi, without its divisions).
template <class T>
struct MasterFilterRowsToOhwi {
  const float* src;  // the filter's OIHW master weights
  T* dst;            // its OHWI copy
  int64_t in_c, taps;  // taps: kh * kw
  SCALETRAIN_HOST_DEVICE void operator()(int64_t r) const {
    const float* s = src + (r / taps) * in_c * taps + r % taps;
    T* d = dst + r * in_c;
    for (int64_t c = 0; c < in_c; ++c) d[c] = from_float<T>(s[c * taps]);
  }
};

// i over the OHWI copies of `count` filters, back to back (ends: where each ends, exclusive):
// dst[o, h, w, c] = T(params[source + OIHW index]), the rounding the compute-type copy's cast makes.
// One launch writes every convolution's filters in the layout its op reads (nn::LaidOutParameters);
// a device thread takes one element and finds its filter in the table, the host runs each filter's
// rows (MasterFilterRowsToOhwi).
template <class T>
struct MasterFiltersToOhwi {
  const float* params;
  T* dst;
  const int64_t* ends;
  const int64_t* table;  // [count, kLaidOutFilterFields]
  int64_t count;
  SCALETRAIN_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t t = first_end_past(ends, count, i);
    const int64_t* row = table + t * kLaidOutFilterFields;
    const int64_t in_c = row[2], kh = row[3], kw = row[4];
    const int64_t j = i - (t > 0 ? ends[t - 1] : 0);
    const int64_t c = j % in_c;
    const int64_t w = (j / in_c) % kw;
    const int64_t h = (j / (in_c * kw)) % kh;
    const int64_t o = j / (in_c * kw * kh);
    dst[i] = from_float<T>(params[row[0] + ((o * in_c + c) * kh + h) * kw + w]);
  }
  template <class Loop>
  void run_on_host(const Loop& loop) const {
    int64_t begin = 0;
    for (int64_t t = 0; t < count; ++t) {
      const int64_t* row = table + t * kLaidOutFilterFields;
      loop(row[1] * row[3] * row[4], MasterFilterRowsToOhwi<T>{params + row[0], dst + begin, row[2], row[3] * row[4]});
      begin = ends[t];
    }
  }
};

}  // namespace scaletrain::kernels
