// The CPU backend's convolution (plain, strided with asymmetric padding, pointwise, grouped,
// depthwise) against a double-precision reference loop: forward, backward-data, backward-weights.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"
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
void check_conv(Backend& backend, const ConvShape& s) {
  SCOPED_TRACE(s.to_string());
  auto op = backend.make_conv(s);
  const size_t nx = s.batch * s.in_h * s.in_w * s.in_c, ny = s.batch * s.out_h() * s.out_w() * s.out_c;
  const size_t nw = s.out_c * (s.in_c / s.groups) * s.kernel_h * s.kernel_w;
  for (unsigned round = 0; round < 2; ++round) {
    const Vec x = random_vec(nx, 1 + 10 * round), w = random_vec(nw, 2 + 10 * round);
    const Vec b = random_vec(s.out_c, 3 + 10 * round), dy = random_vec(ny, 4 + 10 * round);
    const ConvReference ref(s, x, w, b, dy);
    // Outputs start as garbage: every op must overwrite, not accumulate.
    Vec y(ny, 1e30f), dx(nx, 1e30f), dw(nw, 1e30f), db(s.out_c, 1e30f);
    op->forward(x.data(), w.data(), s.bias ? b.data() : nullptr, y.data());
    expect_close(y, ref.y, "forward");
    op->backward_data(dy.data(), w.data(), dx.data());
    expect_close(dx, ref.dx, "backward_data");
    op->backward_weights(x.data(), dy.data(), dw.data(), s.bias ? db.data() : nullptr);
    expect_close(dw, ref.dw, "backward_weights dw");
    if (s.bias) expect_close(db, ref.db, "backward_weights db");
  }
}

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

}  // namespace
}  // namespace scaletrain
