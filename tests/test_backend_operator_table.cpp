// The CPU backend's operator tables: each ends in a candidate that admits every shape, and the ops
// the backend makes name the candidate that made them (what the start-up table prints), on the cpu
// and the simulated device alike.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/operator_table.hpp"

namespace scaletrain {
namespace {

template <class Table, class Shape>
void expect_last_admits(Table table, const Shape& shape) {
  ASSERT_FALSE(table.empty());
  for (bool native : {false, true})
    for (bool onednn_only : {false, true})
      for (bool on_f32 : {false, true})
        EXPECT_TRUE(table.back().admits(cpu::CpuOpSettings{native, onednn_only, on_f32}, shape))
            << table.back().name;
}

ConvShape conv(int64_t in_c, int64_t out_c, int64_t kernel, DType t = DType::f32) {
  ConvShape s;
  s.batch = 4;
  s.in_h = s.in_w = 12;
  s.in_c = in_c;
  s.out_c = out_c;
  s.kernel_h = s.kernel_w = kernel;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = kernel / 2;
  s.dtype = t;
  return s;
}

PoolShape pool(PoolKind kind, DType t = DType::f32) {
  PoolShape p;
  p.kind = kind;
  p.batch = 4;
  p.in_h = p.in_w = 12;
  p.channels = 6;
  p.dtype = t;
  return p;
}

TEST(BackendOperatorTable, EveryTableEndsInACandidateThatAdmitsEveryShape) {
  expect_last_admits(cpu::conv_candidates(), conv(3, 16, 3, DType::f16));
  expect_last_admits(cpu::activated_conv_candidates(), cpu::ActivatedConvShape{conv(3, 16, 3), Activation::relu});
  SeparableConvShape sep;
  sep.depthwise = conv(8, 8, 3);
  sep.depthwise.groups = 8;
  sep.depthwise.bias = false;
  sep.pointwise = conv(8, 16, 1);
  expect_last_admits(cpu::separable_conv_candidates(), sep);
  expect_last_admits(cpu::inner_product_candidates(), InnerProductShape{4, 10, 3, true, DType::bf16});
  expect_last_admits(cpu::pool_candidates(), pool(PoolKind::average));
}

// The shapes the direct loops are for get them, the rest oneDNN's primitives, and run.cpu_onednn_only
// oneDNN's everywhere; bf16 without native kernels names the f32 op it runs on its storage.
TEST(BackendOperatorTable, OpsNameTheCandidateThatMadeThem) {
  const std::unique_ptr<Backend> b = make_cpu_backend(1);
  EXPECT_EQ(b->make_conv(conv(1, 6, 5))->implementation(), "direct narrow rows");
  EXPECT_EQ(b->make_conv(conv(1, 128, 3))->implementation(), "direct few taps");
  EXPECT_EQ(b->make_conv(conv(16, 32, 1))->implementation(), "oneDNN sgemm (pointwise)");
  EXPECT_EQ(b->make_conv(conv(32, 32, 3))->implementation(), "oneDNN convolution");
  EXPECT_EQ(b->make_activated_conv(conv(1, 6, 5), Activation::relu)->implementation(),
            "direct narrow rows, activation inside");
  EXPECT_EQ(b->make_activated_conv(conv(32, 32, 3), Activation::relu)->implementation(),
            "activation kernels after [oneDNN convolution]");
  EXPECT_EQ(b->make_pool(pool(PoolKind::max))->implementation(), "direct max pooling");
  EXPECT_EQ(b->make_pool(pool(PoolKind::average))->implementation(), "oneDNN pooling");
  EXPECT_EQ(b->make_inner_product({4, 10, 3, true, DType::f32})->implementation(), "oneDNN sgemm");
  EXPECT_EQ(b->make_pool(pool(PoolKind::average, DType::f16))->implementation(),
            "f32 on low-precision storage [oneDNN pooling]");
  if (!b->precision_support(DType::bf16).native) {
    EXPECT_EQ(b->make_conv(conv(32, 32, 3, DType::bf16))->implementation(),
              "f32 on low-precision storage [oneDNN convolution]");
  }

  const std::unique_ptr<Backend> onednn = make_cpu_backend(1, true);
  EXPECT_EQ(onednn->make_conv(conv(1, 6, 5))->implementation(), "oneDNN convolution");
  EXPECT_EQ(onednn->make_pool(pool(PoolKind::max))->implementation(), "oneDNN pooling");
  EXPECT_EQ(onednn->make_inner_product({4, 10, 3, true, DType::f32})->implementation(), "oneDNN inner product");
}

TEST(BackendOperatorTable, TheSimulatedDeviceNamesTheCpuBackendsOperators) {
  const std::unique_ptr<Backend> cpu = make_cpu_backend(1);
  BackendOptions o;
  o.kind = DeviceKind::sim;
  o.threads = 1;
  const std::unique_ptr<Backend> sim = make_sim_backend(o);
  for (const ConvShape& s : {conv(1, 6, 5), conv(1, 128, 3), conv(16, 32, 1), conv(32, 32, 3)}) {
    EXPECT_EQ(sim->make_conv(s)->implementation(), cpu->make_conv(s)->implementation()) << s.to_string();
    EXPECT_EQ(sim->make_activated_conv(s, Activation::selu)->implementation(),
              cpu->make_activated_conv(s, Activation::selu)->implementation())
        << s.to_string();
  }
  EXPECT_EQ(sim->make_pool(pool(PoolKind::max))->implementation(), "direct max pooling");
}

// A wrapping candidate reports the op it wraps; the table's unknown storage types stay an error.
TEST(BackendOperatorTable, StorageTypesTheCpuCannotComputeInAreRefused) {
  const std::unique_ptr<Backend> b = make_cpu_backend(1);
  EXPECT_THROW(b->make_conv(conv(32, 32, 3, DType::i32)), Error);
}

}  // namespace
}  // namespace scaletrain
