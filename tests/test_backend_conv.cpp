// The CPU backend's convolution (plain, strided with asymmetric padding, pointwise, grouped,
// depthwise) against a double-precision reference loop: forward, backward-data, backward-weights.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/direct_ops.hpp"
#include "scaletrain/kernels/activation.hpp"
#include "support/test_harness.hpp"

namespace scaletrain {
namespace {

using testing::expect_close;
using testing::random_vec;
using testing::Ref;
using testing::Vec;

// Reference convolution in NHWC with weights [OC, IC/G, KH, KW]; one loop nest visits every
// (output, weight) pair and accumulates forward, backward-data and backward-weights.
struct ConvReference {
  Ref y, dx, dw, db;
  ConvReference(const ConvShape& s, const Vec& x, const Vec& w, const Vec& b, const Vec& dy) {
    const int64_t oh_n = s.out_h(), ow_n = s.out_w(), icg = s.in_c / s.groups, ocg = s.out_c / s.groups;
    y.assign(s.batch * oh_n * ow_n * s.out_c, 0.0);
    dx.assign(x.size(), 0.0);
    dw.assign(w.size(), 0.0);
    db.assign(s.out_c, 0.0);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t oh = 0; oh < oh_n; ++oh)
        for (int64_t ow = 0; ow < ow_n; ++ow)
          for (int64_t oc = 0; oc < s.out_c; ++oc) {
            const int64_t yi = ((n * oh_n + oh) * ow_n + ow) * s.out_c + oc;
            const int64_t g = oc / ocg;
            double acc = s.bias ? b[oc] : 0.0;
            db[oc] += dy[yi];
            for (int64_t kh = 0; kh < s.kernel_h; ++kh) {
              const int64_t ih = oh * s.stride_h - s.pad_top + kh;
              if (ih < 0 || ih >= s.in_h) continue;
              for (int64_t kw = 0; kw < s.kernel_w; ++kw) {
                const int64_t iw = ow * s.stride_w - s.pad_left + kw;
                if (iw < 0 || iw >= s.in_w) continue;
                for (int64_t ic = 0; ic < icg; ++ic) {
                  const int64_t xi = ((n * s.in_h + ih) * s.in_w + iw) * s.in_c + g * icg + ic;
                  const int64_t wi = ((oc * icg + ic) * s.kernel_h + kh) * s.kernel_w + kw;
                  acc += double(x[xi]) * w[wi];
                  dx[xi] += double(dy[yi]) * w[wi];
                  dw[wi] += double(dy[yi]) * x[xi];
                }
              }
            }
            y[yi] = acc;
          }
  }
};

using testing::conv_shape;

// Runs all three passes twice with different weights (the op must pick up new weights every call,
// since training changes them every step) and compares each with the reference.
void check_conv_op(ConvOp& op, const ConvShape& s) {
  SCOPED_TRACE(s.to_string());
  const size_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w = random_vec(nw, 2 + 10 * round);
    const Vec b = random_vec(s.out_c, 3 + 10 * round), dy = random_vec(ny, 4 + 10 * round);
    const ConvReference ref(s, x, w, b, dy);
    // Outputs start as garbage: every op must overwrite, not accumulate.
    Vec y(ny, 1e30f), dx(nx, 1e30f), dw(nw, 1e30f), db(s.out_c, 1e30f);
    op.forward(x.data(), w.data(), s.bias ? b.data() : nullptr, y.data());
    expect_close(y, ref.y, "forward");
    op.backward_data(dy.data(), w.data(), dx.data());
    expect_close(dx, ref.dx, "backward_data");
    op.backward_weights(x.data(), dy.data(), dw.data(), s.bias ? db.data() : nullptr);
    expect_close(dw, ref.dw, "backward_weights dw");
    if (s.bias) expect_close(db, ref.db, "backward_weights db");
  }
}

void check_conv(Backend& backend, const ConvShape& s) { check_conv_op(*backend.make_conv(s), s); }

class BackendConv : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> backend = make_cpu_backend();
};

TEST_F(BackendConv, ThreeByThreeSamePaddingOddChannels) {
  check_conv(*backend, conv_shape(2, 8, 8, 3, 6, 3, 1, 1));
  check_conv(*backend, conv_shape(1, 9, 7, 10, 6, 3, 1, 1));
}

TEST_F(BackendConv, ThreeByThreeBlockedChannels) { check_conv(*backend, conv_shape(4, 10, 10, 32, 32, 3, 1, 1)); }

TEST_F(BackendConv, FiveByFiveValid) {
  check_conv(*backend, conv_shape(1, 12, 12, 10, 32, 5, 1, 0));
  check_conv(*backend, conv_shape(3, 9, 11, 1, 6, 5, 1, 0));
}

// Keras 'same' with stride 2 on an even input puts the extra padding at the bottom/right only.
TEST_F(BackendConv, StrideTwoAsymmetricPadding) {
  ConvShape s = conv_shape(3, 8, 8, 6, 10, 3, 2, 0);
  s.pad_bottom = s.pad_right = 1;
  ASSERT_EQ(s.out_h(), 4);
  check_conv(*backend, s);
  ConvShape t = conv_shape(2, 16, 16, 32, 32, 3, 2, 0, 1, false);
  t.pad_bottom = t.pad_right = 1;
  check_conv(*backend, t);
}

TEST_F(BackendConv, RectangularKernelAndStrides) {
  ConvShape s = conv_shape(2, 9, 10, 3, 10, 3, 1, 1);
  s.kernel_w = 2;
  s.stride_w = 2;
  s.pad_left = 0;
  check_conv(*backend, s);
}

TEST_F(BackendConv, PointwiseOneByOne) {
  check_conv(*backend, conv_shape(2, 7, 7, 32, 32, 1, 1, 0, 1, false));
  check_conv(*backend, conv_shape(1, 5, 6, 10, 3, 1, 1, 0));
}

TEST_F(BackendConv, Grouped) {
  check_conv(*backend, conv_shape(2, 8, 8, 6, 10, 3, 1, 1, 2));
  check_conv(*backend, conv_shape(1, 6, 6, 32, 64, 3, 1, 1, 2, false));
}

TEST_F(BackendConv, Depthwise) {
  check_conv(*backend, conv_shape(2, 8, 8, 10, 10, 3, 1, 1, 10, false));
  check_conv(*backend, conv_shape(3, 9, 9, 32, 32, 3, 1, 1, 32));
  ConvShape s = conv_shape(2, 8, 8, 6, 6, 3, 2, 0, 6, false);
  s.pad_bottom = s.pad_right = 1;
  check_conv(*backend, s);
}

// The direct few-taps convolution that make_conv takes for first layers, on its own, at odd shapes:
// batch 1, output channels that are not multiples of 16 (and more than one 8-block group), odd
// spatial sizes, strides with asymmetric padding, rectangular kernels, no bias.
void check_few_taps(const ConvShape& s) { check_conv_op(*cpu::make_few_taps_conv(s), s); }

TEST(BackendConvFewTaps, OddShapesAgainstTheReference) {
  check_few_taps(conv_shape(1, 7, 9, 1, 5, 3, 1, 1));
  check_few_taps(conv_shape(3, 11, 11, 1, 6, 5, 1, 2));
  check_few_taps(conv_shape(1, 13, 10, 3, 17, 3, 1, 1, 1, false));
  check_few_taps(conv_shape(2, 5, 5, 1, 3, 5, 1, 2));
  check_few_taps(conv_shape(2, 9, 7, 2, 131, 3, 1, 1));
  check_few_taps(conv_shape(1, 6, 6, 1, 128, 3, 1, 1));
}

TEST(BackendConvFewTaps, StridesRectangularKernelsAndAsymmetricPadding) {
  ConvShape s = conv_shape(3, 8, 8, 2, 10, 3, 2, 0);
  s.pad_bottom = s.pad_right = 1;
  check_few_taps(s);
  ConvShape t = conv_shape(2, 9, 10, 3, 10, 3, 1, 1);
  t.kernel_w = 2;
  t.stride_w = 2;
  t.pad_left = 0;
  check_few_taps(t);
}

TEST(BackendConvFewTaps, TakenForFewTapsOnly) {
  EXPECT_TRUE(cpu::prefers_few_taps(conv_shape(64, 28, 28, 1, 128, 3, 1, 1)));
  EXPECT_TRUE(cpu::prefers_few_taps(conv_shape(64, 32, 32, 3, 256, 3, 1, 1)));
  EXPECT_FALSE(cpu::prefers_few_taps(conv_shape(64, 28, 28, 1, 6, 5, 1, 2)));      // measured slower
  EXPECT_FALSE(cpu::prefers_few_taps(conv_shape(64, 32, 32, 3, 64, 3, 1, 1)));     // measured slower
  EXPECT_FALSE(cpu::prefers_few_taps(conv_shape(64, 14, 14, 6, 16, 5, 1, 0)));     // 150 taps
  EXPECT_FALSE(cpu::prefers_few_taps(conv_shape(2, 8, 8, 3, 129, 3, 1, 1, 3)));    // grouped
  EXPECT_FALSE(cpu::prefers_few_taps(conv_shape(2, 8, 8, 4, 128, 1, 1, 0)));       // pointwise
  EXPECT_THROW(cpu::make_few_taps_conv(conv_shape(1, 8, 8, 6, 6, 3, 1, 1)), Error);  // 54 taps
}

// oneDNN's convolution with the direct backward-data (conv_direct_backward_data.cpp) that make_conv takes
// for LeNet's second layer: tap counts of 1 to 10 vectors (9 to 160), output counts not multiples of
// 16, pixel counts not multiples of the 4-pixel tile, batch 1, strides, asymmetric padding,
// rectangular kernels, no bias.
void check_direct_backward_data(const ConvShape& s) {
  auto onednn = make_cpu_backend(0, /*onednn_only=*/true);
  check_conv_op(*cpu::make_direct_backward_data_conv(onednn->make_conv(s), s), s);
}

TEST(BackendConvDirectBackwardData, OddShapesAgainstTheReference) {
  check_direct_backward_data(conv_shape(3, 14, 14, 6, 16, 5, 1, 0));  // LeNet's second layer
  check_direct_backward_data(conv_shape(1, 9, 7, 5, 17, 3, 1, 1));    // 45 taps
  check_direct_backward_data(conv_shape(2, 11, 10, 8, 3, 4, 1, 2));   // 128 taps, even kernel
  check_direct_backward_data(conv_shape(2, 13, 9, 6, 33, 5, 2, 1));   // 150 taps, stride 2
  check_direct_backward_data(conv_shape(2, 7, 8, 1, 5, 3, 1, 1, 1, false));  // 9 taps, no bias
}

TEST(BackendConvDirectBackwardData, StridesRectangularKernelsAndAsymmetricPadding) {
  ConvShape s = conv_shape(2, 10, 9, 3, 9, 3, 2, 0);
  s.kernel_w = 5;
  s.pad_right = 2;
  s.pad_top = 1;
  check_direct_backward_data(s);
  ConvShape t = conv_shape(1, 12, 11, 7, 20, 3, 1, 1);
  t.stride_w = 3;
  t.pad_bottom = 0;
  check_direct_backward_data(t);
}

TEST(BackendConvDirectBackwardData, TakenForFewInputChannels) {
  EXPECT_TRUE(cpu::prefers_direct_backward_data(conv_shape(64, 14, 14, 6, 16, 5, 1, 0)));  // LeNet's second
  EXPECT_TRUE(cpu::prefers_direct_backward_data(conv_shape(64, 32, 32, 3, 64, 3, 1, 1)));
  EXPECT_FALSE(cpu::prefers_direct_backward_data(conv_shape(64, 14, 14, 16, 32, 3, 1, 1)));  // measured slower
  EXPECT_FALSE(cpu::prefers_direct_backward_data(conv_shape(2, 14, 14, 8, 16, 5, 1, 0)));    // 200 taps
  EXPECT_FALSE(cpu::prefers_direct_backward_data(conv_shape(2, 8, 8, 6, 12, 3, 1, 1, 3)));   // grouped
  EXPECT_FALSE(cpu::prefers_direct_backward_data(conv_shape(2, 8, 8, 4, 16, 1, 1, 0)));      // pointwise
  ConvShape b = conv_shape(64, 14, 14, 6, 16, 5, 1, 0);
  b.dtype = DType::bf16;
  EXPECT_FALSE(cpu::prefers_direct_backward_data(b));
  EXPECT_THROW(cpu::make_direct_backward_data_conv(nullptr, conv_shape(1, 8, 8, 8, 6, 5, 1, 1)), Error);  // 200 taps
}

// The narrow-rows convolution (one input channel, at most 16 outputs, vectorized along output rows)
// that make_conv takes for LeNet's first layer: rows shorter and longer than 16 and not multiples of
// it, every output count from 1 to 16, batch 1, stride 2 down the rows, asymmetric padding,
// rectangular kernels, no bias.
void check_narrow_rows(const ConvShape& s) { check_conv_op(*cpu::make_narrow_rows_conv(s), s); }

TEST(BackendConvNarrowRows, OddShapesAgainstTheReference) {
  check_narrow_rows(conv_shape(1, 28, 28, 1, 6, 5, 1, 2));
  check_narrow_rows(conv_shape(2, 9, 7, 1, 3, 3, 1, 1, 1, false));
  check_narrow_rows(conv_shape(3, 11, 33, 1, 5, 5, 1, 0));
  for (int64_t oc = 1; oc <= 16; ++oc) check_narrow_rows(conv_shape(1, 6, 17, 1, oc, 3, 1, 1));
}

TEST(BackendConvNarrowRows, StridesAndRectangularKernels) {
  ConvShape s = conv_shape(2, 12, 19, 1, 7, 3, 1, 0);
  s.stride_h = 2;
  s.pad_bottom = s.pad_right = 1;
  check_narrow_rows(s);
  ConvShape t = conv_shape(2, 9, 20, 1, 4, 3, 1, 1);
  t.kernel_w = 5;
  t.pad_left = 2;
  t.pad_right = 1;
  check_narrow_rows(t);
}

// The weight gradient sweeps at most 5 kernel columns and 20 accumulators (channels) at a time:
// kernel widths 1 to 11 (blocks of 5 and a remainder) against output counts whose channel groups
// leave every remainder.
TEST(BackendConvNarrowRows, WeightGradientSweepsOfEveryKernelWidth) {
  for (int64_t kw = 1; kw <= 11; ++kw)
    for (int64_t oc : {1, 3, 6, 7, 13, 16}) {
      ConvShape s = conv_shape(2, 7, 19, 1, oc, 1, 1, 0);
      s.kernel_h = std::min<int64_t>(3, cpu::kFewTapsMax / kw);
      s.kernel_w = kw;
      s.pad_top = s.pad_bottom = 1;
      s.pad_left = kw / 2;
      s.pad_right = (kw - 1) / 2;
      SCOPED_TRACE("kernel width " + std::to_string(kw) + ", " + std::to_string(oc) + " outputs");
      check_narrow_rows(s);
    }
}

TEST(BackendConvNarrowRows, TakenForOneInputChannelAndFewOutputs) {
  EXPECT_TRUE(cpu::prefers_narrow_rows(conv_shape(64, 28, 28, 1, 6, 5, 1, 2)));
  EXPECT_FALSE(cpu::prefers_narrow_rows(conv_shape(64, 28, 28, 1, 16, 3, 1, 1)));  // measured slower
  EXPECT_FALSE(cpu::prefers_narrow_rows(conv_shape(64, 28, 28, 2, 6, 3, 1, 1)));
  EXPECT_FALSE(cpu::prefers_narrow_rows(conv_shape(64, 28, 28, 1, 6, 3, 2, 1)));   // stride 2 along rows
  EXPECT_THROW(cpu::make_narrow_rows_conv(conv_shape(1, 8, 8, 1, 17, 3, 1, 1)), Error);
}

// The direct depthwise convolution that make_conv takes for f32 depthwise layers, on its own: channel
// counts below, between and above whole 16-float blocks and 8-block groups, batch 1, odd sizes,
// stride 2 with asymmetric padding, a 5x5 kernel (taps beyond the register accumulators), with and
// without bias.
void check_depthwise(const ConvShape& s) { check_conv_op(*cpu::make_direct_depthwise_conv(s), s); }

TEST(BackendConvDirectDepthwise, OddShapesAgainstTheReference) {
  check_depthwise(conv_shape(1, 7, 9, 10, 10, 3, 1, 1, 10, false));
  check_depthwise(conv_shape(2, 5, 6, 33, 33, 3, 1, 1, 33));
  check_depthwise(conv_shape(2, 6, 5, 144, 144, 3, 1, 1, 144, false));
  check_depthwise(conv_shape(1, 9, 9, 128, 128, 3, 1, 1, 128));
  check_depthwise(conv_shape(3, 11, 10, 17, 17, 5, 1, 2, 17));
}

TEST(BackendConvDirectDepthwise, StridesAndAsymmetricPadding) {
  ConvShape s = conv_shape(2, 8, 8, 21, 21, 3, 2, 0, 21, false);
  s.pad_bottom = s.pad_right = 1;
  check_depthwise(s);
  ConvShape t = conv_shape(1, 9, 10, 16, 16, 3, 1, 1, 16);
  t.kernel_w = 2;
  t.stride_w = 2;
  t.pad_left = 0;
  check_depthwise(t);
}

// 3x3 at stride 1 runs the row-blocked loops: rows of 8 output pixels and a remainder of 1-7, every
// padding from 0 to 2 (backward-data pads dy by 2 - padding), asymmetric, and 5x5 or 3x5 kernels
// falling back to the pixel loops.
TEST(BackendConvDirectDepthwise, ThreeByThreeRowBlocks) {
  check_depthwise(conv_shape(2, 6, 28, 19, 19, 3, 1, 1, 19));
  for (int64_t w = 1; w <= 9; ++w) check_depthwise(conv_shape(1, 4, w + 2, 16, 16, 3, 1, 0, 16));
  check_depthwise(conv_shape(1, 5, 7, 33, 33, 3, 1, 2, 33, false));
  ConvShape s = conv_shape(2, 7, 17, 20, 20, 3, 1, 0, 20);
  s.pad_bottom = s.pad_left = 1;
  s.pad_right = 2;
  check_depthwise(s);
  ConvShape t = conv_shape(1, 6, 9, 18, 18, 3, 1, 1, 18, false);
  t.kernel_w = 5;
  t.pad_left = t.pad_right = 2;
  check_depthwise(t);
}

// 'Same' 3x3 of whole channel blocks reads dy unpadded in backward-data: the first and last columns
// of every row block width, and images one row high or one pixel wide.
TEST(BackendConvDirectDepthwise, SameThreeByThreeUnpadded) {
  for (int64_t w = 1; w <= 17; ++w) check_depthwise(conv_shape(1, 3, w, 16, 16, 3, 1, 1, 16));
  check_depthwise(conv_shape(2, 1, 9, 32, 32, 3, 1, 1, 32, false));
  check_depthwise(conv_shape(2, 6, 1, 48, 48, 3, 1, 1, 48, false));
  check_depthwise(conv_shape(3, 7, 7, 64, 64, 3, 1, 1, 64));
}

TEST(BackendConvDirectDepthwise, RefusesOtherShapes) {
  EXPECT_THROW(cpu::make_direct_depthwise_conv(conv_shape(2, 8, 8, 6, 12, 3, 1, 1, 6)), Error);  // multiplier 2
  EXPECT_THROW(cpu::make_direct_depthwise_conv(conv_shape(2, 8, 8, 6, 6, 3, 1, 1, 2)), Error);   // grouped
}

// The separable convolution (depthwise + pointwise + activation; fused image by image, or composed)
// against the two reference convolutions one after the other and the activation in double: y, dx,
// and the three gradients, at odd channel and filter counts, batch 1, stride 2 with asymmetric
// padding, and batches of several chunks.
Vec as_floats(const Ref& r) { return Vec(r.begin(), r.end()); }

// y = act(pre) and dpre = act'(pre) * dy in double.
Ref reference_activation(Activation act, const Ref& pre) {
  Ref y(pre.size());
  for (size_t i = 0; i < pre.size(); ++i) {
    const double v = pre[i];
    if (act == Activation::none) y[i] = v;
    if (act == Activation::relu) y[i] = v > 0 ? v : 0;
    if (act == Activation::selu) y[i] = v > 0 ? kernels::kSeluScale * v : kernels::kSeluScale * kernels::kSeluAlpha * std::expm1(v);
  }
  return y;
}
Vec reference_activation_gradient(Activation act, const Ref& pre, const Vec& dy) {
  Vec dpre(pre.size());
  for (size_t i = 0; i < pre.size(); ++i) {
    const double v = pre[i];
    double slope = 1;
    if (act == Activation::relu) slope = v > 0 ? 1 : 0;
    if (act == Activation::selu) slope = v > 0 ? kernels::kSeluScale : kernels::kSeluScale * kernels::kSeluAlpha * std::exp(v);
    dpre[i] = static_cast<float>(slope * dy[i]);
  }
  return dpre;
}

SeparableConvShape separable_shape(const ConvShape& dw, int64_t filters, Activation act) {
  SeparableConvShape s;
  s.depthwise = dw;
  s.pointwise = conv_shape(dw.batch, dw.out_h(), dw.out_w(), dw.out_c, filters, 1, 1, 0);
  s.activation = act;
  return s;
}

void check_separable(SeparableConvOp& op, const SeparableConvShape& s) {
  SCOPED_TRACE(s.to_string());
  const ConvShape &dw = s.depthwise, &pw = s.pointwise;
  const int64_t filters = pw.out_c;
  const bool act = s.activation != Activation::none;
  const size_t nx = dw.batch * dw.in_h * dw.in_w * dw.in_c, nmid = dw.batch * pw.in_h * pw.in_w * pw.in_c;
  const size_t ny = pw.batch * pw.in_h * pw.in_w * filters;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w_dw = random_vec(dw.in_c * dw.kernel_h * dw.kernel_w, 2 + 10 * round);
    const Vec w_pw = random_vec(filters * pw.in_c, 3 + 10 * round), b = random_vec(filters, 4 + 10 * round);
    const Vec dy = random_vec(ny, 5 + 10 * round);
    const ConvReference ref_dw_fwd(dw, x, w_dw, Vec{}, Vec(nmid, 0.0f));
    const Vec mid_ref = as_floats(ref_dw_fwd.y);
    const ConvReference ref_pre(pw, mid_ref, w_pw, b, Vec(ny, 0.0f));
    const Vec dpre_ref = reference_activation_gradient(s.activation, ref_pre.y, dy);
    const ConvReference ref_pw(pw, mid_ref, w_pw, b, dpre_ref);
    const ConvReference ref_dw(dw, x, w_dw, Vec{}, as_floats(ref_pw.dx));
    Vec mid(nmid, 1e30f), pre(ny, 1e30f), y(ny, 1e30f), dmid(nmid), dpre(ny), dx(nx, 1e30f), dw_dw(w_dw.size(), 1e30f);
    Vec dw_pw(w_pw.size(), 1e30f), db(filters, 1e30f);
    float* out = act ? y.data() : pre.data();
    float* dpre_scratch = act ? dpre.data() : nullptr;
    // mid and pre are the op's to keep state in (the fused op leaves them unwritten): only y is checked.
    op.forward(x.data(), w_dw.data(), w_pw.data(), b.data(), mid.data(), pre.data(), out);
    expect_close(act ? y : pre, reference_activation(s.activation, ref_pre.y), "y");
    op.backward(x.data(), mid.data(), pre.data(), out, dy.data(), w_dw.data(), w_pw.data(), dpre_scratch, dmid.data(),
                dw_dw.data(), dw_pw.data(), db.data(), dx.data());
    expect_close(dx, ref_dw.dx, "dx");
    expect_close(dw_dw, ref_dw.dw, "depthwise dw");
    expect_close(dw_pw, ref_pw.dw, "pointwise dw");
    expect_close(db, ref_pw.db, "db");
    // Without dx (a first layer), the gradients are the same.
    Vec dw_dw2(w_dw.size()), dw_pw2(w_pw.size()), db2(filters);
    op.backward(x.data(), mid.data(), pre.data(), out, dy.data(), w_dw.data(), w_pw.data(), dpre_scratch, dmid.data(),
                dw_dw2.data(), dw_pw2.data(), db2.data(), nullptr);
    EXPECT_EQ(dw_dw2, dw_dw);
    EXPECT_EQ(dw_pw2, dw_pw);
  }
}

void check_fused_separable(const ConvShape& dw, int64_t filters, Activation act = Activation::selu) {
  const SeparableConvShape s = separable_shape(dw, filters, act);
  check_separable(*cpu::make_fused_separable_conv(s), s);
}

// A convolution and its activation as one op (the few-taps op applying it per image; the composed op
// every other backend runs) against the reference convolution and the activation in double: y, dw,
// db, and dx when asked for; without dx (a first layer) the same dw and db.
void check_activated(ActivatedConvOp& op, const ConvShape& s, Activation act) {
  SCOPED_TRACE(s.to_string() + ", activation " + activation_name(act));
  const size_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w = random_vec(nw, 2 + 10 * round);
    const Vec b = random_vec(s.out_c, 3 + 10 * round), dy = random_vec(ny, 4 + 10 * round);
    const ConvReference ref_pre(s, x, w, b, Vec(ny, 0.0f));
    const ConvReference ref(s, x, w, b, reference_activation_gradient(act, ref_pre.y, dy));
    Vec pre(ny, 1e30f), y(ny, 1e30f), dpre(ny), dx(nx, 1e30f), dw(nw, 1e30f), db(s.out_c, 1e30f);
    const bool has_act = act != Activation::none;
    float* out = has_act ? y.data() : pre.data();
    op.forward(x.data(), w.data(), s.bias ? b.data() : nullptr, pre.data(), out);
    expect_close(has_act ? y : pre, reference_activation(act, ref_pre.y), "y");
    op.backward(x.data(), pre.data(), out, dy.data(), w.data(), has_act ? dpre.data() : nullptr, dw.data(),
                s.bias ? db.data() : nullptr, dx.data());
    expect_close(dx, ref.dx, "dx");
    expect_close(dw, ref.dw, "dw");
    if (s.bias) expect_close(db, ref.db, "db");
    Vec dw2(nw), db2(s.out_c);
    op.backward(x.data(), pre.data(), out, dy.data(), w.data(), has_act ? dpre.data() : nullptr, dw2.data(),
                s.bias ? db2.data() : nullptr, nullptr);
    EXPECT_EQ(dw2, dw);
    if (s.bias) {
      EXPECT_EQ(db2, db);
    }
  }
}

TEST(BackendConvFewTaps, WithTheActivationInside) {
  for (Activation act : {Activation::none, Activation::relu, Activation::selu}) {
    for (const ConvShape& s : {conv_shape(2, 9, 11, 1, 130, 3, 1, 1), conv_shape(1, 7, 5, 3, 17, 3, 1, 1, 1, false)})
      check_activated(*cpu::make_few_taps_activated_conv(s, act), s, act);
  }
}

TEST(BackendConvNarrowRows, WithTheActivationInside) {
  for (Activation act : {Activation::none, Activation::relu, Activation::selu}) {
    for (const ConvShape& s : {conv_shape(1, 28, 28, 1, 6, 5, 1, 2), conv_shape(3, 11, 33, 1, 5, 5, 1, 0),
                               conv_shape(2, 9, 7, 1, 3, 3, 1, 1, 1, false), conv_shape(2, 6, 17, 1, 16, 3, 1, 1)})
      check_activated(*cpu::make_narrow_rows_activated_conv(s, act), s, act);
  }
}

// The cpu backend's op for LeNet's first layer with ReLU is the narrow-rows op with the activation
// inside: its forward writes y alone.
TEST(BackendConvNarrowRows, TakenWithTheActivationForLeNetsFirstLayer) {
  auto cpu = make_cpu_backend(1);
  const ConvShape s = conv_shape(2, 28, 28, 1, 6, 5, 1, 2);
  auto op = cpu->make_activated_conv(s, Activation::relu);
  const size_t nx = s.batch * s.in_h * s.in_w, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const Vec x = random_vec(nx, 5), w = random_vec(6 * 25, 6), b = random_vec(6, 7);
  Vec pre(ny, 1e30f), y(ny, 1e30f);
  op->forward(x.data(), w.data(), b.data(), pre.data(), y.data());
  EXPECT_EQ(pre, Vec(ny, 1e30f));
  EXPECT_EQ(*std::min_element(y.begin(), y.end()), 0.0f);
  check_activated(*op, s, Activation::relu);
}

TEST(BackendActivatedConvComposed, EachActivationAgainstTheReference) {
  auto cpu = make_cpu_backend(1, /*onednn_only=*/true);
  for (Activation act : {Activation::none, Activation::relu, Activation::selu}) {
    const ConvShape s = conv_shape(2, 8, 9, 6, 20, 3, 1, 1);
    check_activated(*cpu->make_activated_conv(s, act), s, act);
  }
}

TEST(BackendSeparableConvFused, OddShapesAgainstTheReference) {
  check_fused_separable(conv_shape(1, 7, 9, 10, 10, 3, 1, 1, 10, false), 13);
  check_fused_separable(conv_shape(3, 6, 5, 33, 33, 3, 1, 1, 33, false), 17);
  check_fused_separable(conv_shape(2, 5, 5, 144, 144, 3, 1, 1, 144, false), 16);
  check_fused_separable(conv_shape(2, 9, 8, 17, 17, 5, 1, 2, 17, false), 5);
}

// At a multiple of 64 channels the padded rows carry slack (L1 sets): every row and tail block
// still reads the right pixels, in each padding.
TEST(BackendConvDirectDepthwise, ThreeByThreeRowsWithSlack) {
  check_depthwise(conv_shape(2, 7, 7, 64, 64, 3, 1, 1, 64, false));
  check_depthwise(conv_shape(1, 5, 11, 128, 128, 3, 1, 0, 128));
  check_depthwise(conv_shape(1, 4, 3, 64, 64, 3, 1, 2, 64, false));
  check_fused_separable(conv_shape(3, 7, 7, 64, 64, 3, 1, 1, 64, false), 24);
}

TEST(BackendSeparableConvFused, EachActivation) {
  for (Activation act : {Activation::none, Activation::relu, Activation::selu})
    check_fused_separable(conv_shape(2, 14, 15, 19, 19, 3, 1, 1, 19, false), 21, act);
}

// The composed op every other backend runs (here the cpu backend's oneDNN ops), with the activation's
// kernels launched on the backend's stream between them.
TEST(BackendSeparableConvComposed, EachActivationAgainstTheReference) {
  auto cpu = make_cpu_backend(1, /*onednn_only=*/true);
  for (Activation act : {Activation::none, Activation::relu, Activation::selu}) {
    const SeparableConvShape s = separable_shape(conv_shape(2, 14, 15, 19, 19, 3, 1, 1, 19, false), 21, act);
    check_separable(*cpu->make_separable_conv(s), s);
  }
}

TEST(BackendSeparableConvFused, StrideTwoAsymmetricPadding) {
  ConvShape dw = conv_shape(3, 8, 8, 21, 21, 3, 2, 0, 21, false);
  dw.pad_bottom = dw.pad_right = 1;
  check_fused_separable(dw, 11);
}

// 40 images of 28x28 make 40 chunks, 70 images of 7x7 (16 images per chunk) 5 chunks, the last partial.
TEST(BackendSeparableConvFused, SeveralChunks) {
  check_fused_separable(conv_shape(40, 28, 28, 3, 3, 3, 1, 1, 3, false), 4);
  check_fused_separable(conv_shape(70, 7, 7, 5, 5, 3, 1, 1, 5, false), 6);
}

// A max pooling of `channels` over batch x h x w images in kernel x kernel windows with stride `stride`.
PoolShape max_pool_shape(int64_t batch, int64_t h, int64_t w, int64_t channels, int64_t kernel = 2,
                         int64_t stride = 2) {
  PoolShape ps;
  ps.batch = batch;
  ps.in_h = h;
  ps.in_w = w;
  ps.channels = channels;
  ps.kernel_h = ps.kernel_w = kernel;
  ps.stride_h = ps.stride_w = stride;
  return ps;
}

// The fused op with the max pooling after it absorbed, against the same op with the direct max
// pooling run after it: the pooled output and every gradient bit for bit, over two rounds (the second
// reuses the per-chunk argmax the first left). The absorbing op need not write y, and its backward must
// not read it: y is NaN throughout.
void check_absorbed_pool(const ConvShape& dw, int64_t filters, Activation act, int64_t kernel, int64_t stride) {
  const SeparableConvShape s = separable_shape(dw, filters, act);
  const ConvShape& pw = s.pointwise;
  SCOPED_TRACE(s.to_string() + ", pool " + std::to_string(kernel) + "/" + std::to_string(stride));
  const PoolShape ps = max_pool_shape(pw.batch, pw.in_h, pw.in_w, filters, kernel, stride);
  auto apart = cpu::make_fused_separable_conv(s);
  auto pool = cpu::make_direct_max_pool(ps);
  auto fused = cpu::make_fused_separable_conv(s);
  const size_t nx = dw.batch * dw.in_h * dw.in_w * dw.in_c, ny = pw.batch * pw.in_h * pw.in_w * filters;
  const size_t np = ps.batch * ps.out_h() * ps.out_w() * filters, nw_dw = dw.in_c * dw.kernel_h * dw.kernel_w;
  Vec pooled(np, 1e30f);
  ASSERT_TRUE(fused->absorb_pool(ps, pooled.data()));
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w_dw = random_vec(nw_dw, 2 + 10 * round);
    const Vec w_pw = random_vec(filters * pw.in_c, 3 + 10 * round), b = random_vec(filters, 4 + 10 * round);
    const Vec dpooled = random_vec(np, 5 + 10 * round);
    Vec y(ny, std::nanf("")), y_ref(ny), pooled_ref(np), dy(ny), scratch(ny), dmid(nx);
    apart->forward(x.data(), w_dw.data(), w_pw.data(), b.data(), dmid.data(), scratch.data(), y_ref.data());
    pool->forward(y_ref.data(), pooled_ref.data(), true);
    fused->forward(x.data(), w_dw.data(), w_pw.data(), b.data(), dmid.data(), scratch.data(), y.data());
    std::fill(y.begin(), y.end(), std::nanf(""));
    EXPECT_EQ(pooled, pooled_ref);
    Vec dx_ref(nx), dw_dw_ref(nw_dw), dw_pw_ref(w_pw.size()), db_ref(filters);
    pool->backward(dpooled.data(), dy.data());
    apart->backward(x.data(), nullptr, nullptr, y_ref.data(), dy.data(), w_dw.data(), w_pw.data(), scratch.data(),
                    dmid.data(), dw_dw_ref.data(), dw_pw_ref.data(), db_ref.data(), dx_ref.data());
    Vec dx(nx, 1e30f), dw_dw(nw_dw, 1e30f), dw_pw(w_pw.size(), 1e30f), db(filters, 1e30f);
    fused->backward(x.data(), nullptr, nullptr, y.data(), dpooled.data(), w_dw.data(), w_pw.data(), scratch.data(),
                    dmid.data(), dw_dw.data(), dw_pw.data(), db.data(), dx.data());
    EXPECT_EQ(dx, dx_ref);
    EXPECT_EQ(dw_dw, dw_dw_ref);
    EXPECT_EQ(dw_pw, dw_pw_ref);
    EXPECT_EQ(db, db_ref);
  }
}

// Odd sizes (the pooling skips the last row and column), channel counts off 16, batch 1, several chunks
// with a partial last one (70 images of 7x7 in chunks of 16), 3x3/3 windows, each activation.
TEST(BackendSeparableConvFused, AbsorbsTheMaxPoolingAfterIt) {
  check_absorbed_pool(conv_shape(1, 7, 9, 10, 10, 3, 1, 1, 10, false), 13, Activation::selu, 2, 2);
  check_absorbed_pool(conv_shape(3, 28, 28, 3, 3, 3, 1, 1, 3, false), 17, Activation::selu, 2, 2);
  check_absorbed_pool(conv_shape(70, 7, 7, 5, 5, 3, 1, 1, 5, false), 33, Activation::selu, 2, 2);
  check_absorbed_pool(conv_shape(2, 9, 11, 6, 6, 3, 1, 1, 6, false), 7, Activation::selu, 3, 3);
  for (Activation act : {Activation::none, Activation::relu})
    check_absorbed_pool(conv_shape(2, 14, 15, 19, 19, 3, 1, 1, 19, false), 21, act, 2, 2);
}

// It takes only an f32 max pooling of its own output, in windows that do not overlap.
TEST(BackendSeparableConvFused, RefusesOtherPoolings) {
  const SeparableConvShape s = separable_shape(conv_shape(2, 8, 8, 4, 4, 3, 1, 1, 4, false), 6, Activation::selu);
  const PoolShape ps = max_pool_shape(2, 8, 8, 6);
  Vec pooled(2 * 4 * 4 * 6);
  PoolShape average = ps, other_channels = ps, other_batch = ps, overlapping = ps;
  average.kind = PoolKind::average;
  other_channels.channels = 4;
  other_batch.batch = 3;
  overlapping.kernel_h = overlapping.kernel_w = 3;
  for (const PoolShape& p : {average, other_channels, other_batch, overlapping})
    EXPECT_FALSE(cpu::make_fused_separable_conv(s)->absorb_pool(p, pooled.data())) << p.to_string();
  EXPECT_TRUE(cpu::make_fused_separable_conv(s)->absorb_pool(ps, pooled.data()));
}

TEST(BackendSeparableConvFused, TheCpuBackendFusesF32ImagesFrom7x7) {
  SeparableConvShape s;
  s.depthwise = conv_shape(2, 7, 7, 16, 16, 3, 1, 1, 16, false);
  s.pointwise = conv_shape(2, 7, 7, 16, 32, 1, 1, 0);
  EXPECT_TRUE(cpu::prefers_fused_separable(s));
  SeparableConvShape small = s;  // 6x6 images: not measured, left composed
  small.depthwise.in_h = small.depthwise.in_w = small.pointwise.in_h = small.pointwise.in_w = 6;
  EXPECT_FALSE(cpu::prefers_fused_separable(small));
  s.depthwise.dtype = s.pointwise.dtype = DType::bf16;
  EXPECT_FALSE(cpu::prefers_fused_separable(s));
  s.pointwise.in_c = 8;  // not the depthwise output
  EXPECT_NE(testing::error_of([&] { s.validate(); }).find("must take the depthwise output"), std::string::npos);
}

// The narrow-rows op with its activation and an absorbed max pooling against the same op followed by
// the direct pooling: the pooled output, dw, db and (with dx asked for: not a first layer) dx bit for
// bit, over two rounds. The absorbing op's y is NaN throughout: it must neither need nor read it.
void check_narrow_rows_absorbed_pool(const ConvShape& s, Activation act, int64_t kernel, int64_t stride) {
  SCOPED_TRACE(s.to_string() + ", activation " + activation_name(act) + ", pool " + std::to_string(kernel) + "/" +
               std::to_string(stride));
  const PoolShape ps = max_pool_shape(s.batch, s.out_h(), s.out_w(), s.out_c, kernel, stride);
  auto apart = cpu::make_narrow_rows_activated_conv(s, act);
  auto pool = cpu::make_direct_max_pool(ps);
  auto absorbing = cpu::make_narrow_rows_activated_conv(s, act);
  const size_t nx = s.batch * s.in_h * s.in_w, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const size_t np = ps.batch * ps.out_h() * ps.out_w() * s.out_c, nw = s.out_c * s.kernel_h * s.kernel_w;
  Vec pooled(np, 1e30f);
  ASSERT_TRUE(absorbing->absorb_pool(ps, pooled.data()));
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w = random_vec(nw, 2 + 10 * round);
    const Vec b = random_vec(s.out_c, 3 + 10 * round), dpooled = random_vec(np, 4 + 10 * round);
    Vec y(ny, std::nanf("")), y_ref(ny), pooled_ref(np), dy(ny), dpre(ny);
    const float* bias = s.bias ? b.data() : nullptr;
    apart->forward(x.data(), w.data(), bias, nullptr, y_ref.data());
    pool->forward(y_ref.data(), pooled_ref.data(), true);
    absorbing->forward(x.data(), w.data(), bias, nullptr, y.data());
    EXPECT_EQ(pooled, pooled_ref);
    pool->backward(dpooled.data(), dy.data());
    for (bool with_dx : {false, true}) {
      Vec dx_ref(nx, 1e30f), dw_ref(nw, 1e30f), db_ref(s.out_c, 1e30f), dx(nx, 1e30f), dw(nw), db(s.out_c);
      float* dpre_arg = act == Activation::none ? nullptr : dpre.data();
      apart->backward(x.data(), nullptr, y_ref.data(), dy.data(), w.data(), dpre_arg, dw_ref.data(),
                      s.bias ? db_ref.data() : nullptr, with_dx ? dx_ref.data() : nullptr);
      absorbing->backward(x.data(), nullptr, y.data(), dpooled.data(), w.data(), dpre_arg, dw.data(),
                          s.bias ? db.data() : nullptr, with_dx ? dx.data() : nullptr);
      EXPECT_EQ(dw, dw_ref) << "with dx " << with_dx;
      if (s.bias) {
        EXPECT_EQ(db, db_ref) << "with dx " << with_dx;
      }
      EXPECT_EQ(dx, dx_ref) << "with dx " << with_dx;
    }
  }
}

// LeNet's first layer; odd sizes (the pooling drops the last row and column), output channel counts
// 1 to 8, batch 1, 3x3/3 windows, without bias, each activation.
TEST(BackendConvNarrowRows, AbsorbsTheMaxPoolingAfterIt) {
  check_narrow_rows_absorbed_pool(conv_shape(4, 28, 28, 1, 6, 5, 1, 2), Activation::relu, 2, 2);
  check_narrow_rows_absorbed_pool(conv_shape(1, 11, 13, 1, 5, 5, 1, 2), Activation::relu, 2, 2);
  check_narrow_rows_absorbed_pool(conv_shape(3, 9, 19, 1, 1, 3, 1, 0), Activation::selu, 2, 2);
  check_narrow_rows_absorbed_pool(conv_shape(2, 17, 14, 1, 8, 3, 1, 1, 1, false), Activation::none, 3, 3);
  check_narrow_rows_absorbed_pool(conv_shape(2, 10, 10, 1, 3, 5, 1, 2), Activation::selu, 2, 2);
}

// It takes only an f32 max pooling of its own output, in windows that do not overlap; the few-taps op
// (several input channels) takes none.
TEST(BackendConvNarrowRows, RefusesOtherPoolings) {
  const ConvShape s = conv_shape(2, 8, 8, 1, 6, 5, 1, 2);
  const PoolShape ps = max_pool_shape(2, 8, 8, 6);
  Vec pooled(2 * 4 * 4 * 6);
  PoolShape average = ps, other_channels = ps, other_batch = ps, overlapping = ps, other_size = ps;
  average.kind = PoolKind::average;
  other_channels.channels = 4;
  other_batch.batch = 3;
  overlapping.kernel_h = overlapping.kernel_w = 3;
  other_size.in_w = 7;
  for (const PoolShape& p : {average, other_channels, other_batch, overlapping, other_size})
    EXPECT_FALSE(cpu::make_narrow_rows_activated_conv(s, Activation::relu)->absorb_pool(p, pooled.data()))
        << p.to_string();
  EXPECT_TRUE(cpu::make_narrow_rows_activated_conv(s, Activation::relu)->absorb_pool(ps, pooled.data()));
  const ConvShape two_channels = conv_shape(2, 8, 8, 2, 6, 3, 1, 1);
  EXPECT_FALSE(cpu::make_few_taps_activated_conv(two_channels, Activation::relu)->absorb_pool(ps, pooled.data()));
}

// A composed op takes over a pooling only with its backend's PoolAbsorption, with an activation, and
// for a max pooling of its output in windows that do not overlap.
TEST(BackendActivatedConvComposed, AbsorbsOnlyMaxPoolingsItsBackendLetsItRun) {
  auto cpu = make_cpu_backend(1, /*onednn_only=*/true);
  const ConvShape s = conv_shape(2, 8, 8, 3, 6, 3, 1, 1);
  const PoolShape ps = max_pool_shape(2, 8, 8, 6);
  Vec pooled(2 * 4 * 4 * 6);
  const PoolAbsorption absorption{[](const PoolShape& p) { return cpu::make_direct_max_pool(p); },
                                  [](const Shape& shape, DType t, const std::string& name) {
                                    return Tensor(shape, t, name);
                                  }};
  auto composed = [&](Activation act, PoolAbsorption a) {
    return compose_post_activated_conv(s, act, cpu->make_conv(s), cpu->compute_stream(), std::move(a));
  };
  EXPECT_FALSE(composed(Activation::relu, {})->absorb_pool(ps, pooled.data()));
  EXPECT_FALSE(composed(Activation::none, absorption)->absorb_pool(ps, pooled.data()));
  PoolShape average = ps, overlapping = ps, other_channels = ps;
  average.kind = PoolKind::average;
  overlapping.kernel_h = overlapping.kernel_w = 3;
  other_channels.channels = 5;
  for (const PoolShape& p : {average, overlapping, other_channels})
    EXPECT_FALSE(composed(Activation::relu, absorption)->absorb_pool(p, pooled.data())) << p.to_string();
  EXPECT_TRUE(composed(Activation::relu, absorption)->absorb_pool(ps, pooled.data()));
}

// The direct ops split images across OpenMP threads and add per-thread partial sums in thread order:
// with 3 threads (more than some batches have images) they still match the reference.
TEST(BackendConvDirectOps, ThreeThreads) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(3);
  check_few_taps(conv_shape(5, 9, 7, 1, 130, 3, 1, 1));
  check_narrow_rows(conv_shape(2, 11, 19, 1, 6, 5, 1, 2));
  check_depthwise(conv_shape(4, 6, 7, 33, 33, 3, 1, 1, 33));
  check_fused_separable(conv_shape(5, 14, 14, 20, 20, 3, 1, 1, 20, false), 24);
  check_fused_separable(conv_shape(2, 5, 5, 7, 7, 3, 1, 1, 7, false), 9);
  check_absorbed_pool(conv_shape(5, 14, 14, 20, 20, 3, 1, 1, 20, false), 24, Activation::selu, 2, 2);
  check_narrow_rows_absorbed_pool(conv_shape(5, 11, 13, 1, 6, 5, 1, 2), Activation::relu, 2, 2);
  omp_set_num_threads(saved);
}

// An impossible shape is refused when the op is made, with a message naming the shape.
void expect_refused(Backend& backend, const ConvShape& s, const std::string& reason) {
  try {
    backend.make_conv(s);
    FAIL() << "make_conv accepted " << s.to_string();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(s.to_string()), std::string::npos) << msg;
    EXPECT_NE(msg.find(reason), std::string::npos) << msg;
  }
}

TEST_F(BackendConv, ImpossibleShapesThrowNamingTheShape) {
  expect_refused(*backend, conv_shape(1, 4, 4, 3, 8, 7, 1, 1), "kernel is larger than the padded input");
  expect_refused(*backend, conv_shape(1, 8, 8, 0, 8, 3, 1, 1), "must be positive");
  expect_refused(*backend, conv_shape(1, 8, 8, 3, 8, 3, 1, 1, 0), "must be positive");
  expect_refused(*backend, conv_shape(1, 8, 8, 6, 8, 3, 1, 1, 4), "divisible by groups");
  expect_refused(*backend, conv_shape(2, 8, 8, 4, 6, 3, 1, 1, 4), "divisible by groups");
}

TEST_F(BackendConv, MissingBiasGradientBufferThrows) {
  const ConvShape s = conv_shape(1, 4, 4, 2, 2, 3, 1, 1);
  auto op = backend->make_conv(s);
  Vec x(32, 0.5f), dy(32, 0.5f), dw(36);
  EXPECT_THROW(op->backward_weights(x.data(), dy.data(), dw.data(), nullptr), Error);
}

// PyTorch's explicit padding (nn.Conv2d(padding=p), torchvision's ResNet): p on every side. With
// stride 2 on an even size the last row and column of padding fall in no window (3x3/2 padding 1 on
// 8 rows: 4 outputs read rows -1 .. 7), and 1x1/2 on an even size leaves the input's last row and
// column unused; every path that admits such a shape (the operator table's choice, oneDNN's, and
// each direct op on its own) against the reference.
TEST(BackendConvExplicitPadding, UnusedLastRowsAndColumnsOnEveryPath) {
  auto fast = make_cpu_backend(), onednn = make_cpu_backend(0, /*onednn_only=*/true);
  for (const ConvShape& s : {conv_shape(2, 8, 8, 4, 6, 3, 2, 1), conv_shape(1, 16, 16, 3, 8, 7, 2, 3),
                             conv_shape(2, 8, 8, 8, 12, 1, 2, 0), conv_shape(2, 8, 8, 6, 6, 3, 2, 1, 6, false)}) {
    check_conv(*fast, s);
    check_conv(*onednn, s);
  }
  check_few_taps(conv_shape(2, 8, 8, 2, 128, 3, 2, 1));
  check_few_taps(conv_shape(1, 10, 10, 3, 130, 3, 2, 1, 1, false));
  check_direct_backward_data(conv_shape(2, 16, 16, 3, 64, 7, 2, 3));  // ResNet's stem: 147 taps
  check_direct_backward_data(conv_shape(1, 10, 9, 6, 17, 3, 2, 1));
  ConvShape rows = conv_shape(2, 10, 12, 1, 6, 3, 1, 1);
  rows.stride_h = 2;  // 5 output rows read padded rows 0 .. 10 of 12
  check_narrow_rows(rows);
  check_depthwise(conv_shape(2, 8, 8, 21, 21, 3, 2, 1, 21, false));
  check_depthwise(conv_shape(1, 10, 10, 16, 16, 5, 2, 2, 16));
  check_fused_separable(conv_shape(2, 16, 14, 8, 8, 3, 2, 1, 8, false), 10);
}

}  // namespace
}  // namespace scaletrain
