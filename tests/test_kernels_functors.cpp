// The kernels/ functors on the host execution space, against double-precision formulas: the
// same functors the CUDA backend launches (tests/cuda/kernels_device_compile.cu compiles them
// as device code), so what is checked here is the arithmetic of both paths.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/adaptive_pool.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/conv_layout.hpp"
#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/launch.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/packs.hpp"
#include "scaletrain/kernels/pool_direct.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

using namespace scaletrain;
using namespace scaletrain::kernels;

namespace {

std::vector<float> ramp(int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return v;
}

TEST(Functors, SeluMatchesFormula) {
  const double alpha = 1.6732632423543772, scale = 1.0507009873554805;
  auto x = ramp(101, -6.0f, 4.0f);
  std::vector<float> y(x.size()), dy(x.size(), 0.5f), dx(x.size());
  launch_host("selu", 101, SeluForward{x.data(), y.data()});
  launch_host("selu_bwd", 101, SeluBackward{x.data(), dy.data(), dx.data()});
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    const double ref = v > 0 ? scale * v : scale * alpha * (std::exp(v) - 1);
    const double dref = 0.5 * (v > 0 ? scale : scale * alpha * std::exp(v));
    EXPECT_NEAR(y[i], ref, 1e-6 + 1e-6 * std::fabs(ref));
    EXPECT_NEAR(dx[i], dref, 1e-6 + 1e-6 * std::fabs(dref));
  }
}

TEST(Functors, ReluForwardBackward) {
  auto x = ramp(11, -1.0f, 1.0f);
  std::vector<float> y(11), dy(11, 2.0f), dx(11);
  launch_host("relu", 11, ReluForward{x.data(), y.data()});
  launch_host("relu_bwd", 11, ReluBackward{x.data(), dy.data(), dx.data()});
  for (size_t i = 0; i < 11; ++i) {
    EXPECT_EQ(y[i], x[i] > 0 ? x[i] : 0.0f);
    EXPECT_EQ(dx[i], x[i] > 0 ? 2.0f : 0.0f);
  }
}

TEST(Functors, BiasAddAndGrad) {
  const int64_t rows = 5, ch = 3;
  std::vector<float> y(rows * ch, 1.0f), b{0.5f, -1.0f, 2.0f}, dy(rows * ch), db(ch);
  for (int64_t i = 0; i < rows * ch; ++i) dy[static_cast<size_t>(i)] = static_cast<float>(i);
  launch_host("bias", rows * ch, BiasAdd{y.data(), b.data(), ch});
  launch_host("bias_grad", ch, BiasGrad{dy.data(), db.data(), rows, ch});
  for (int64_t i = 0; i < rows * ch; ++i) EXPECT_EQ(y[static_cast<size_t>(i)], 1.0f + b[static_cast<size_t>(i % ch)]);
  for (int64_t c = 0; c < ch; ++c) EXPECT_EQ(db[static_cast<size_t>(c)], static_cast<float>(0 + 3 + 6 + 9 + 12 + 5 * c));
}

TEST(Functors, DropoutKeepsTheRightFractionAndIsReproducible) {
  const int64_t n = 200000;
  std::vector<float> x(n, 1.0f), y(n), y2(n), dx(n);
  std::vector<uint8_t> m(n), m2(n);
  const int64_t per = 1000, rows = n / per;
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) idx[static_cast<size_t>(r)] = 5000 + r;
  const double step11 = 11, step12 = 12;  // the step numbers the kernel reads (host memory here)
  launch_host("dropout", n, DropoutForward{x.data(), y.data(), m.data(), 0.3f, 7, &step11, idx.data(), per});
  launch_host("dropout", n, DropoutForward{x.data(), y2.data(), m2.data(), 0.3f, 7, &step11, idx.data(), per});
  EXPECT_EQ(m, m2) << "same seed and step must give the same mask";
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += m[static_cast<size_t>(i)];
    EXPECT_FLOAT_EQ(y[static_cast<size_t>(i)], m[static_cast<size_t>(i)] ? 1.0f / 0.7f : 0.0f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / n, 0.7, 0.005);  // 5 sigma of a binomial at n = 2e5
  launch_host("dropout", n, DropoutForward{x.data(), y2.data(), m2.data(), 0.3f, 7, &step12, idx.data(), per});
  EXPECT_NE(m, m2) << "another step must draw another mask";
  // The mask belongs to the sample, not to the row: rows in reverse order get the same masks.
  std::vector<int64_t> rev(idx.rbegin(), idx.rend());
  launch_host("dropout", n, DropoutForward{x.data(), y2.data(), m2.data(), 0.3f, 7, &step11, rev.data(), per});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < per; ++j)
      ASSERT_EQ(m[static_cast<size_t>(r * per + j)], m2[static_cast<size_t>((rows - 1 - r) * per + j)]) << "row " << r;
  std::vector<float> dy(n, 3.0f);
  launch_host("dropout_bwd", n, DropoutBackward{dy.data(), m.data(), dx.data(), 1.0f / 0.7f});
  for (int64_t i = 0; i < n; i += 997) EXPECT_FLOAT_EQ(dx[static_cast<size_t>(i)], m[static_cast<size_t>(i)] ? 3.0f / 0.7f : 0.0f);
}

TEST(Functors, SoftmaxCrossEntropyMatchesDouble) {
  const int64_t rows = 4, k = 5;
  std::vector<float> z{1, 2, 3, 4, 5, -50, 0, 50, 1, 2, 0, 0, 0, 0, 0, 3, -1, 2, 8, 0};
  std::vector<int32_t> labels{4, 0, 2, 3};
  std::vector<float> p(rows * k), loss(rows), dz(rows * k);
  std::vector<int32_t> correct(rows);
  launch_host("sce", rows, RowsOnHost<SoftmaxCrossEntropyForward>{
                               plan_rows(rows, k), {z.data(), labels.data(), p.data(), loss.data(), correct.data(), k}});
  launch_host("sce_bwd", rows * k, SoftmaxCrossEntropyBackward{p.data(), labels.data(), dz.data(), k, 0.25f});
  for (int64_t r = 0; r < rows; ++r) {
    double mx = -1e300, s = 0;
    for (int64_t j = 0; j < k; ++j) mx = std::max(mx, static_cast<double>(z[static_cast<size_t>(r * k + j)]));
    for (int64_t j = 0; j < k; ++j) s += std::exp(z[static_cast<size_t>(r * k + j)] - mx);
    const double ref = std::log(s) - (z[static_cast<size_t>(r * k + labels[static_cast<size_t>(r)])] - mx);
    EXPECT_NEAR(loss[static_cast<size_t>(r)], ref, 1e-5 * (1 + ref));
    for (int64_t j = 0; j < k; ++j) {
      const double pj = std::exp(z[static_cast<size_t>(r * k + j)] - mx) / s;
      EXPECT_NEAR(dz[static_cast<size_t>(r * k + j)], 0.25 * (pj - (j == labels[static_cast<size_t>(r)])), 1e-6);
    }
  }
  EXPECT_EQ(correct, (std::vector<int32_t>{1, 0, 0, 1}));
}

TEST(Functors, CastsRoundTrip) {
  std::vector<float> x{0.0f, 1.0f, -2.5f, 3.140625f, 65504.0f, 1e-3f, 1.0f + 1.0f / 256};
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<bf16> b(x.size());
  std::vector<f16> h(x.size());
  std::vector<float> xb(x.size()), xh(x.size());
  launch_host("to_bf16", n, Cast<float, bf16>{x.data(), b.data()});
  launch_host("from_bf16", n, Cast<bf16, float>{b.data(), xb.data()});
  launch_host("to_f16", n, Cast<float, f16>{x.data(), h.data()});
  launch_host("from_f16", n, Cast<f16, float>{h.data(), xh.data()});
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(xb[i], x[i], std::fabs(x[i]) / 128.0f) << "bf16 keeps 8 significant bits";
    EXPECT_NEAR(xh[i], x[i], std::fabs(x[i]) / 1024.0f + 1e-7f) << "f16 keeps 11 significant bits";
  }
  EXPECT_EQ(xb[3], 3.140625f);
  EXPECT_EQ(xb[6], 1.0f) << "1 + 2^-8 rounds to even in bf16";
  EXPECT_EQ(xh[4], 65504.0f);
}

TEST(Functors, ScaleAndNonFiniteFlags) {
  std::vector<float> x{1, 2, INFINITY, 4, NAN, 6, 7}, loss{-INFINITY, 1};
  launch_host("scale", 2, Scale{x.data(), 0.5f});
  EXPECT_EQ(x[0], 0.5f);
  EXPECT_EQ(x[1], 1.0f);
  const NonFiniteFlags flags{x.data(), 7, 2, loss.data()};
  std::vector<float> g, l;
  for (int64_t i = 0; i < 9; ++i) {
    float v[1];
    flags.load(i, i < 3 ? 0 : i < 7 ? 1 : 2, v);  // segments 0, 1: the 7 gradients' tensors; 2: the losses
    (i < 7 ? g : l).push_back(v[0]);
  }
  EXPECT_EQ(g, (std::vector<float>{0, 0, 1, 0, 1, 0, 0}));
  EXPECT_EQ(l, (std::vector<float>{1, 0}));
}

TEST(Functors, NormalizeAndAugment) {
  const int64_t n = 6, h = 4, w = 5, c = 2, plane = h * w * c;
  std::vector<uint8_t> x(n * plane), y(n * plane);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i % 200 + 1);
  std::vector<float> mean{10.0f, 20.0f}, inv{0.5f, 0.25f}, out(x.size());
  launch_host("normalize", n * plane / c, Normalize<uint8_t, float>{x.data(), out.data(), mean.data(), inv.data(), c});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(out[i], (x[i] - mean[i % 2]) * inv[i % 2]);
  // One channel: the per-element functor agrees with the per-pixel one.
  std::vector<float> gray(x.size()), gray_ref(x.size());
  launch_host("normalize", static_cast<int64_t>(x.size()), NormalizeOneChannel<uint8_t, float>{x.data(), gray.data(), 33.0f, 0.125f});
  launch_host("normalize", static_cast<int64_t>(x.size()), Normalize<uint8_t, float>{x.data(), gray_ref.data(), mean.data() + 0, inv.data() + 0, 1});
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(gray[i], (x[i] - 33.0f) * 0.125f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_FLOAT_EQ(gray_ref[i], (x[i] - mean[0]) * inv[0]);
  // pad 0, no flip: identity.
  std::vector<int64_t> idx(n);
  for (int64_t s = 0; s < n; ++s) idx[static_cast<size_t>(s)] = 100 + 7 * s;
  const double step2 = 2, step4 = 4;  // the step numbers the kernel reads (host memory here)
  launch_host("augment", n, AugmentCropFlip<uint8_t>{x.data(), y.data(), h, w, c, 0, false, 1, &step2, idx.data()});
  EXPECT_EQ(x, y);
  // pad 0 with flip: each sample identical or mirrored, both seen.
  launch_host("augment", n, AugmentCropFlip<uint8_t>{x.data(), y.data(), h, w, c, 0, true, 1, &step2, idx.data()});
  int mirrored = 0;
  for (int64_t s = 0; s < n; ++s) {
    bool same = true, mirror = true;
    for (int64_t r = 0; r < h; ++r)
      for (int64_t q = 0; q < w; ++q)
        for (int64_t k = 0; k < c; ++k) {
          const uint8_t v = y[static_cast<size_t>(s * plane + (r * w + q) * c + k)];
          same &= v == x[static_cast<size_t>(s * plane + (r * w + q) * c + k)];
          mirror &= v == x[static_cast<size_t>(s * plane + (r * w + (w - 1 - q)) * c + k)];
        }
    EXPECT_TRUE(same || mirror) << "sample " << s;
    mirrored += mirror && !same;
  }
  EXPECT_GT(mirrored, 0);
  EXPECT_LT(mirrored, n);
  // pad 2: every output pixel is zero padding or some input pixel of the same sample and channel.
  launch_host("augment", n, AugmentCropFlip<uint8_t>{x.data(), y.data(), h, w, c, 2, false, 3, &step4, idx.data()});
  for (int64_t i = 0; i < n * plane; ++i) {
    const uint8_t v = y[static_cast<size_t>(i)];
    if (v == 0) continue;
    const int64_t s = i / plane;
    bool found = false;
    for (int64_t j = s * plane + i % c; j < (s + 1) * plane; j += c) found |= x[static_cast<size_t>(j)] == v;
    EXPECT_TRUE(found);
  }
}

// Every filter's OHWI copy from the flat f32 master weights in one launch: the element-wise form a
// device runs (each element finds its filter in the table) and the host's per-filter rows write the
// same values, each the OIHW weight at its place, rounded to the copy's type.
TEST(Functors, MasterFiltersToOhwiMovesEveryWeightToItsPlace) {
  struct Filter {
    int64_t o, c, kh, kw;
  };
  const Filter filters[] = {{4, 3, 3, 3}, {5, 2, 1, 1}, {3, 1, 5, 2}};
  std::vector<int64_t> table, ends;
  int64_t total = 0, source = 7;  // the filters start 7 values into the parameters
  for (const Filter& f : filters) {
    table.insert(table.end(), {source, f.o, f.c, f.kh, f.kw});
    source += f.o * f.c * f.kh * f.kw + 2;  // 2 other values between the filters
    total += f.o * f.c * f.kh * f.kw;
    ends.push_back(total);
  }
  std::vector<float> params(static_cast<size_t>(source));
  for (size_t i = 0; i < params.size(); ++i) params[i] = 0.001f * static_cast<float>(i) + 1.0f / 3.0f;
  std::vector<bf16> by_element(static_cast<size_t>(total)), by_rows(by_element.size());
  const auto f = [&](bf16* dst) {
    return MasterFiltersToOhwi<bf16>{params.data(), dst, ends.data(), table.data(), 3};
  };
  for (int64_t i = 0; i < total; ++i) f(by_element.data())(i);
  launch_host("filters_to_op_layout", total, f(by_rows.data()));
  int64_t at = 0;
  for (size_t t = 0; t < 3; ++t) {
    const Filter& g = filters[t];
    const int64_t src = table[t * 5];
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t h = 0; h < g.kh; ++h)
        for (int64_t w = 0; w < g.kw; ++w)
          for (int64_t c = 0; c < g.c; ++c, ++at) {
            const size_t oihw = static_cast<size_t>(src + ((o * g.c + c) * g.kh + h) * g.kw + w);
            const float want = to_float(from_float<bf16>(params[oihw]));
            ASSERT_EQ(to_float(by_element[static_cast<size_t>(at)]), want) << "filter " << t << " element " << at;
            ASSERT_EQ(to_float(by_rows[static_cast<size_t>(at)]), want) << "filter " << t << " element " << at;
          }
  }
}

// The stored type changes nothing but the load: f32 and f16 samples holding uint8's values
// normalize and augment to bitwise the same inputs (what a float copy of a uint8 data set trains on).
TEST(Functors, FloatSamplesPrepareLikeTheirUint8Values) {
  const int64_t n = 5, h = 6, w = 7, c = 3, plane = h * w * c;
  std::vector<uint8_t> x(n * plane), xa(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>((i * 37) % 256);
  std::vector<float> xf(x.begin(), x.end()), xfa(x.size());
  std::vector<f16> xh(x.size()), xha(x.size());
  for (size_t i = 0; i < x.size(); ++i) xh[i] = float_to_f16(static_cast<float>(x[i]));
  std::vector<int64_t> idx(n);
  for (int64_t s = 0; s < n; ++s) idx[static_cast<size_t>(s)] = 11 + 3 * s;
  const double step6 = 6;
  launch_host("augment", n, AugmentCropFlip<uint8_t>{x.data(), xa.data(), h, w, c, 2, true, 5, &step6, idx.data()});
  launch_host("augment", n, AugmentCropFlip<float>{xf.data(), xfa.data(), h, w, c, 2, true, 5, &step6, idx.data()});
  launch_host("augment", n, AugmentCropFlip<f16>{xh.data(), xha.data(), h, w, c, 2, true, 5, &step6, idx.data()});
  std::vector<float> mean{72.9f, 10.5f, 200.25f}, inv{1 / 90.0f, 1 / 3.0f, 1 / 77.0f};
  std::vector<float> from_u8(x.size()), from_f32(x.size()), from_f16(x.size());
  launch_host("normalize", n * plane / c, Normalize<uint8_t, float>{xa.data(), from_u8.data(), mean.data(), inv.data(), c});
  launch_host("normalize", n * plane / c, Normalize<float, float>{xfa.data(), from_f32.data(), mean.data(), inv.data(), c});
  launch_host("normalize", n * plane / c, Normalize<f16, float>{xha.data(), from_f16.data(), mean.data(), inv.data(), c});
  EXPECT_EQ(0, std::memcmp(from_u8.data(), from_f32.data(), from_u8.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(from_u8.data(), from_f16.data(), from_u8.size() * sizeof(float)));
  std::vector<bf16> one_u8(x.size()), one_f32(x.size());
  launch_host("normalize", n * plane, NormalizeOneChannel<uint8_t, bf16>{xa.data(), one_u8.data(), 33.0f, 0.125f});
  launch_host("normalize", n * plane, NormalizeOneChannel<float, bf16>{xfa.data(), one_f32.data(), 33.0f, 0.125f});
  EXPECT_EQ(0, std::memcmp(one_u8.data(), one_f32.data(), one_u8.size() * sizeof(bf16)));
}

TEST(Functors, SgdMomentumFirstStepUsesTheGradient) {
  std::vector<float> p{1.0f}, g{2.0f}, buf{123.0f};
  launch_host("sgd", 1, SgdUpdate{p.data(), g.data(), buf.data(), 0.1f, 0.9f, 0.0f, 0.0f, false, true});
  EXPECT_FLOAT_EQ(buf[0], 2.0f);
  EXPECT_FLOAT_EQ(p[0], 0.8f);
}

// Explicit NHWC padding puts every input value at its place and `fill` around it; cropping the
// padded image gives the input back, bit for bit.
TEST(Functors, PadAndCropNhwc) {
  const int64_t n = 2, h = 3, w = 4, c = 5, top = 1, left = 0, bottom = 2, right = 1;
  const NhwcPadGeometry g{h, w, c, h + top + bottom, w + left + right, top, left};
  const int64_t nx = n * h * w * c, np = n * g.padded_h * g.padded_w * c;
  std::vector<bf16> x(static_cast<size_t>(nx)), xp(static_cast<size_t>(np)), back(static_cast<size_t>(nx));
  for (int64_t i = 0; i < nx; ++i) x[static_cast<size_t>(i)] = from_float<bf16>(static_cast<float>(i + 1));
  launch_host("pad", np, PadNhwc<bf16>{x.data(), xp.data(), g, -2.0f});
  int64_t inside = 0;
  for (int64_t i = 0; i < np; ++i) {
    const int64_t ch = i % c, pw = (i / c) % g.padded_w, ph = (i / (c * g.padded_w)) % g.padded_h;
    const int64_t s = i / (c * g.padded_w * g.padded_h);
    const float v = to_float(xp[static_cast<size_t>(i)]);
    if (ph < top || ph >= top + h || pw < left || pw >= left + w) {
      EXPECT_EQ(v, -2.0f) << i;
    } else {
      ++inside;
      EXPECT_EQ(v, to_float(x[static_cast<size_t>(((s * h + ph - top) * w + pw - left) * c + ch)])) << i;
    }
  }
  EXPECT_EQ(inside, nx);
  launch_host("crop", nx, CropNhwc<bf16>{xp.data(), back.data(), g});
  for (int64_t i = 0; i < nx; ++i) EXPECT_EQ(back[static_cast<size_t>(i)].bits, x[static_cast<size_t>(i)].bits);
}

// OIHW -> OHWI -> OIHW is the identity, and an element lands where the layouts say.
TEST(Functors, FilterReordersRoundTrip) {
  const FilterGeometry g{3, 2, 3, 5};  // O, I, KH, KW
  const int64_t n = 3 * 2 * 3 * 5;
  std::vector<float> oihw(static_cast<size_t>(n)), back(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) oihw[static_cast<size_t>(i)] = static_cast<float>(i) * 0.5f;
  std::vector<f16> ohwi(static_cast<size_t>(n));
  launch_host("to_ohwi", n, FilterOihwToOhwi<float, f16>{oihw.data(), ohwi.data(), g});
  // o = 2, c = 1, h = 0, w = 4: OIHW index ((2 * 2 + 1) * 3 + 0) * 5 + 4, OHWI ((2 * 3 + 0) * 5 + 4) * 2 + 1.
  EXPECT_EQ(to_float(ohwi[((2 * 3 + 0) * 5 + 4) * 2 + 1]), oihw[((2 * 2 + 1) * 3 + 0) * 5 + 4]);
  launch_host("to_oihw", n, FilterOhwiToOihw<f16, float>{ohwi.data(), back.data(), g});
  EXPECT_EQ(back, oihw);
}

// Direct 2x2 pooling, stride 2, one extra row and column at the end (TF 'same' on 3x3): the corner
// window holds one real cell, its maximum and its average are that cell.
TEST(Functors, DirectPoolingWithEndPadding) {
  const PoolGeometry g{3, 3, 1, 2, 2, 2, 2, 2, 2, 0, 0, false};
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y(4), dx(9);
  const std::vector<float> dy{1, 10, 100, 1000};
  launch_host("max", 4, PoolForwardDirect<float>{x.data(), y.data(), g, true});
  EXPECT_EQ(y, (std::vector<float>{5, 6, 8, 9}));
  launch_host("max_bwd", 9, PoolBackwardDirect<float>{x.data(), dy.data(), dx.data(), g, true});
  EXPECT_EQ(dx, (std::vector<float>{0, 0, 0, 0, 1, 10, 0, 100, 1000}));
  launch_host("avg", 4, PoolForwardDirect<float>{x.data(), y.data(), g, false});
  EXPECT_EQ(y, (std::vector<float>{3, 4.5f, 7.5f, 9}));
  launch_host("avg_bwd", 9, PoolBackwardDirect<float>{x.data(), dy.data(), dx.data(), g, false});
  EXPECT_EQ(dx, (std::vector<float>{0.25f, 0.25f, 5, 0.25f, 0.25f, 5, 50, 50, 1000}));
}

// The same windows averaged with count_include_pad: every window divides by its 4 cells, padding
// included (PyTorch's default), and each cell's gradient is dy / 4 of every window holding it.
TEST(Functors, DirectAverageCountingPadding) {
  const PoolGeometry g{3, 3, 1, 2, 2, 2, 2, 2, 2, 0, 0, true};
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> y(4), dx(9);
  const std::vector<float> dy{4, 40, 400, 4000};
  launch_host("avg", 4, PoolForwardDirect<float>{x.data(), y.data(), g, false});
  EXPECT_EQ(y, (std::vector<float>{3, 2.25f, 3.75f, 2.25f}));
  launch_host("avg_bwd", 9, PoolBackwardDirect<float>{x.data(), dy.data(), dx.data(), g, false});
  EXPECT_EQ(dx, (std::vector<float>{1, 1, 10, 1, 1, 10, 100, 100, 1000}));
}

// Adaptive average pooling's windows, as torch.nn.AdaptiveAvgPool2d: 5 columns to 3 average
// [0, 2), [1, 4) and [3, 5) (overlapping); 1 row to 2 repeats it. Backward gathers dy / size from
// every window holding a cell.
TEST(Functors, AdaptivePoolingWindows) {
  const AdaptivePoolGeometry g{1, 5, 1, 2, 3};
  const std::vector<float> x{1, 2, 3, 4, 5};
  std::vector<float> y(6), dx(5);
  launch_host("adaptive", 6, AdaptivePoolForward<float>{x.data(), y.data(), g});
  EXPECT_EQ(y, (std::vector<float>{1.5f, 3, 4.5f, 1.5f, 3, 4.5f}));
  const std::vector<float> dy{2, 3, 4, 2, 3, 4};  // the two rows alike
  launch_host("adaptive_bwd", 5, AdaptivePoolBackward<float>{dy.data(), dx.data(), g});
  // column 0: window 0 (size 2); 1: windows 0 and 1 (3); 2: window 1; 3: windows 1 and 2 (2); 4: window 2.
  EXPECT_EQ(dx, (std::vector<float>{2, 2 + 2, 2, 2 + 4, 4}));
}

// A NaN in a window is its maximum (the non-finite checks downstream see it), wherever it sits.
TEST(Functors, DirectMaxPropagatesNaN) {
  const PoolGeometry g{2, 2, 1, 1, 1, 2, 2, 2, 2, 0, 0, false};
  for (size_t at = 0; at < 4; ++at) {
    std::vector<float> x{1, 2, 3, 4}, y(1);
    x[at] = NAN;
    launch_host("max", 1, PoolForwardDirect<float>{x.data(), y.data(), g, true});
    EXPECT_TRUE(std::isnan(y[0])) << at;
  }
}

// The contiguous element-wise functors in packs of kChannelPack (as a CUDA thread runs them,
// kernels/packs.hpp) against one element per index (as the host runs them): bitwise.
template <class T>
struct PackedValues {
  std::vector<Pack<T, kChannelPack>> packs;
  PackedValues(int64_t n, uint32_t seed, float lo = -3.0f, float hi = 3.0f)
      : packs(static_cast<size_t>(n / kChannelPack)) {
    uint32_t s = seed;
    for (int64_t i = 0; i < n; ++i) {
      s = s * 1664525u + 1013904223u;
      data()[i] = from_float<T>(lo + (hi - lo) * static_cast<float>(s >> 8) / 16777216.0f);
    }
  }
  T* data() { return &packs[0].v[0]; }
  std::vector<uint8_t> bytes() const {
    std::vector<uint8_t> b(packs.size() * sizeof(packs[0]));
    std::memcpy(b.data(), packs.data(), b.size());
    return b;
  }
};

constexpr int64_t kPackedN = kChannelPack * 37;

template <class F>
void run_elements(const F& f, bool packed) {
  ASSERT_TRUE(f.packs_fit());
  if (packed) {
    launch_host("packs", kPackedN / kChannelPack, ElementPacks<F, kChannelPack>{f});
  } else {
    launch_host("elements", kPackedN, f);
  }
}

// run(packed) launches a functor on fresh inputs one way and returns its outputs' bytes.
template <class Run>
void expect_packs_match_elements(const char* what, const Run& run) {
  const std::vector<std::vector<uint8_t>> elements = run(false), packs = run(true);
  EXPECT_EQ(elements, packs) << what;
}

template <class T>
class ElementPacksOf : public ::testing::Test {};
using StorageTypes = ::testing::Types<float, bf16, f16>;
TYPED_TEST_SUITE(ElementPacksOf, StorageTypes);

TYPED_TEST(ElementPacksOf, ActivationsSumsAndCastsMatchOneElementPerIndex) {
  using T = TypeParam;
  const auto unary = [](auto make) {
    return [make](bool packed) {
      PackedValues<T> x(kPackedN, 1), y(kPackedN, 2);
      run_elements(make(x.data(), y.data()), packed);
      return std::vector<std::vector<uint8_t>>{y.bytes()};
    };
  };
  const auto binary = [](auto make) {
    return [make](bool packed) {
      PackedValues<T> a(kPackedN, 3), b(kPackedN, 4), out(kPackedN, 5);
      run_elements(make(a.data(), b.data(), out.data()), packed);
      return std::vector<std::vector<uint8_t>>{out.bytes()};
    };
  };
  expect_packs_match_elements("relu", unary([](T* x, T* y) { return ReluForward<T>{x, y}; }));
  expect_packs_match_elements("selu", unary([](T* x, T* y) { return SeluForward<T>{x, y}; }));
  expect_packs_match_elements("relu backward", binary([](T* a, T* d, T* o) { return ReluBackward<T>{a, d, o}; }));
  expect_packs_match_elements("selu backward", binary([](T* a, T* d, T* o) { return SeluBackward<T>{a, d, o}; }));
  expect_packs_match_elements("selu backward from y", binary([](T* a, T* d, T* o) {
                                return SeluBackwardFromOutput<T>{a, d, o};
                              }));
  expect_packs_match_elements("add", binary([](T* a, T* b, T* o) { return AddTensors<T>{a, b, o}; }));
  expect_packs_match_elements("add in place", [](bool packed) {
    PackedValues<T> a(kPackedN, 6), b(kPackedN, 7);
    run_elements(AddTensors<T>{a.data(), b.data(), a.data()}, packed);
    return std::vector<std::vector<uint8_t>>{a.bytes()};
  });
  expect_packs_match_elements("cast to T", [](bool packed) {
    PackedValues<float> x(kPackedN, 8, -1e4f, 1e4f);
    PackedValues<T> y(kPackedN, 9);
    run_elements(Cast<float, T>{x.data(), y.data(), 3.0f}, packed);
    return std::vector<std::vector<uint8_t>>{y.bytes()};
  });
  expect_packs_match_elements("cast from T", [](bool packed) {
    PackedValues<T> x(kPackedN, 10);
    PackedValues<float> y(kPackedN, 11);
    run_elements(Cast<T, float>{x.data(), y.data(), 2.0f}, packed);
    return std::vector<std::vector<uint8_t>>{y.bytes()};
  });
}

TEST(ElementPacks, ScalingAndOptimizerUpdatesMatchOneElementPerIndex) {
  using Out = std::vector<std::vector<uint8_t>>;
  expect_packs_match_elements("scale", [](bool packed) {
    PackedValues<float> x(kPackedN, 12);
    run_elements(Scale{x.data(), 0.37f}, packed);
    return Out{x.bytes()};
  });
  expect_packs_match_elements("divide", [](bool packed) {
    PackedValues<float> x(kPackedN, 13);
    run_elements(DivideBy{x.data(), 3.0f}, packed);
    return Out{x.bytes()};
  });
  for (const bool first : {true, false})
    for (const bool nesterov : {true, false})
      expect_packs_match_elements("sgd", [first, nesterov](bool packed) {
        PackedValues<float> p(kPackedN, 14), g(kPackedN, 15), b(kPackedN, 16);
        run_elements(SgdUpdate{p.data(), g.data(), b.data(), 0.1f, 0.9f, 0.1f, 1e-2f, nesterov, first}, packed);
        return Out{p.bytes(), b.bytes()};
      });
  expect_packs_match_elements("sgd without momentum", [](bool packed) {
    PackedValues<float> p(kPackedN, 17), g(kPackedN, 18);
    run_elements(SgdUpdate{p.data(), g.data(), nullptr, 0.1f, 0.0f, 0.0f, 1e-2f, false, false}, packed);
    return Out{p.bytes()};
  });
  expect_packs_match_elements("adamw", [](bool packed) {
    PackedValues<float> p(kPackedN, 19), g(kPackedN, 20), m(kPackedN, 21), v(kPackedN, 22, 0.0f, 2.0f);
    run_elements(AdamWUpdate{p.data(), g.data(), m.data(), v.data(), 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.19f, 0.002f},
                 packed);
    return Out{p.bytes(), m.bytes(), v.bytes()};
  });
}

// Every range's update in one launch (MultiTensorUpdate) against the separate passes it replaces:
// fp16's unscaling, the update of each range with its weight decay, the cast to the compute type.
// Bitwise the same on the host (range by range) and one element at a time (a device's threads);
// nothing at all where the step is skipped.
TEST(Functors, MultiTensorUpdateIsTheSeparatePassesInOneLaunch) {
  const int64_t n = kPackedN;
  StepState state;
  state.lr = 0.25f;
  state.unscale = 1.0f / 1024.0f;
  state.bias_correction1 = 0.19f;
  state.bias_correction2 = 0.002f;
  const std::vector<int64_t> ends{40, 41, 200, n};  // decayed, not, decayed, not
  const std::vector<int32_t> decayed{1, 0, 1, 0};
  const UpdateRangeTable table{ends.data(), decayed.data(), 4};
  PackedValues<float> p0(n, 30), g0(n, 31, -3000.0f, 3000.0f), m0(n, 32), v0(n, 33, 0.0f, 2.0f);
  const auto adamw = [](PackedValues<float>& p, PackedValues<float>& g, PackedValues<float>& m,
                        PackedValues<float>& v, float lr, float wd, float bc1, float bc2, int64_t at) {
    return AdamWUpdate{p.data() + at, g.data() + at, m.data() + at, v.data() + at, lr, 0.9f, 0.999f, 1e-8f, wd, bc1, bc2};
  };
  // The separate passes.
  PackedValues<float> p1 = p0, g1 = g0, m1 = m0, v1 = v0;
  std::vector<bf16> c1(static_cast<size_t>(n));
  launch_host("unscale", n, Scale{g1.data(), 1.0f / 1024.0f});
  for (int64_t r = 0, begin = 0; r < 4; begin = ends[static_cast<size_t>(r++)])
    launch_host("adamw", ends[static_cast<size_t>(r)] - begin,
                adamw(p1, g1, m1, v1, 0.25f, decayed[static_cast<size_t>(r)] ? 0.01f : 0.0f, 0.19f, 0.002f, begin));
  launch_host("cast", n, Cast<float, bf16>{p1.data(), c1.data()});
  // One launch, the host's way and a device's way.
  for (const bool per_element : {false, true}) {
    PackedValues<float> p2 = p0, g2 = g0, m2 = m0, v2 = v0;
    std::vector<bf16> c2(static_cast<size_t>(n));
    const MultiTensorUpdate<AdamWUpdate, bf16> one{adamw(p2, g2, m2, v2, 0.0f, 0.0f, 1.0f, 1.0f, 0), &state, table,
                                                   0.01f, true, c2.data()};
    if (per_element) {
      for (int64_t i = 0; i < n; ++i) one(i);
    } else {
      launch_host("adamw, one launch", n, one);
    }
    EXPECT_EQ(p1.bytes(), p2.bytes()) << (per_element ? "per element" : "host");
    EXPECT_EQ(g1.bytes(), g2.bytes()) << "the unscaled gradients";
    EXPECT_EQ(m1.bytes(), m2.bytes());
    EXPECT_EQ(v1.bytes(), v2.bytes());
    EXPECT_EQ(0, std::memcmp(c1.data(), c2.data(), c1.size() * sizeof(bf16))) << "the compute-type copy";
    state.skip = 1;
    launch_host("adamw, skipped", n, one);
    EXPECT_EQ(p1.bytes(), p2.bytes()) << "a skipped step writes nothing";
    EXPECT_EQ(g1.bytes(), g2.bytes());
    state.skip = 0;
  }
  std::vector<float> p{1.0f}, grad{2.0f}, buf{123.0f};
  StepState first;
  first.lr = 0.1f;
  first.first_update = 1;
  const std::vector<int64_t> one_end{1};
  const std::vector<int32_t> no_decay{0};
  launch_host("sgd", 1,
              MultiTensorUpdate<SgdUpdate, float>{SgdUpdate{p.data(), grad.data(), buf.data(), 9.0f, 0.9f, 0.0f, 0.0f, false, false},
                                                  &first, UpdateRangeTable{one_end.data(), no_decay.data(), 1}, 0.5f,
                                                  false, nullptr});
  EXPECT_FLOAT_EQ(buf[0], 2.0f) << "the state's first update starts the momentum";
  EXPECT_FLOAT_EQ(p[0], 0.8f) << "at the state's learning rate, without decay in that range";
}

TEST(ElementPacks, FitOnlyWherePointersAreAlignedForAPack) {
  PackedValues<bf16> x(kPackedN, 23), y(kPackedN, 24);
  PackedValues<float> f(kPackedN, 25);
  EXPECT_TRUE((ReluForward<bf16>{x.data(), y.data()}.packs_fit()));
  EXPECT_FALSE((ReluForward<bf16>{x.data() + 1, y.data()}.packs_fit()));
  EXPECT_FALSE((Cast<float, bf16>{f.data() + 4, y.data()}.packs_fit())) << "8 floats are 32 bytes";
  EXPECT_TRUE((Cast<float, bf16>{f.data() + 8, y.data() + 8}.packs_fit()));
  EXPECT_TRUE((SgdUpdate{f.data(), f.data(), nullptr, 0.1f, 0.0f, 0.0f, 0.0f, false, false}.packs_fit()))
      << "no momentum buffer";
}

}  // namespace
