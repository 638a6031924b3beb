// Graph models: resmlp and branchnet against their PyTorch twins (tests/data/graph_reference.h5,
// made by tests/reference/make_graph_reference.py), weights loaded by name; the graph's checks
// naming the nodes at fault; the execution order; pooling absorbed only by a producer with one
// consumer; the summary's "Connected to"; buffers named and laid out apart from the parameters.
#include <gtest/gtest.h>

#include <cstring>

#include "scaletrain/core/error.hpp"
#include "scaletrain/nn/conv2d.hpp"
#include "scaletrain/nn/dense.hpp"
#include "scaletrain/nn/merge_layers.hpp"
#include "scaletrain/nn/pooling.hpp"
#include "scaletrain/nn/shape_layers.hpp"
#include "scaletrain/nn/softmax_cross_entropy.hpp"
#include "scaletrain/nn/torch_twin.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/device_tensors.hpp"
#include "support/layer_harness.hpp"
#include "support/reference_file.hpp"
#include "support/test_harness.hpp"
#include "support/tracking_layer.hpp"

using namespace scaletrain;
using scaletrain::testing::backend_of;
using scaletrain::testing::on_device;
using scaletrain::testing::ReferenceFile;
using scaletrain::testing::tensors_close;
using scaletrain::testing::to_host;

namespace {

const std::string kFile = std::string(SCALETRAIN_TEST_DATA_DIR) + "/graph_reference.h5";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

struct GraphRun {
  std::vector<float> logits, gradients;  // gradients: the flat buffer
  double loss = 0;
};

// One training step's forward and backward of zoo model `name` with the twin's weights, loaded by name.
GraphRun run_with_twin_weights(Backend& backend, const std::string& name, DType dtype) {
  ReferenceFile f(kFile);
  const Tensor x = f.dataset(name + "/x");
  const int64_t batch = x.dim(0);
  auto m = nn::make_zoo_model(name, {x.dim(1), x.dim(2), x.dim(3)}, 10);
  m->build(backend, batch, dtype);
  Tensor flat({m->parameter_count()}, DType::f32, "loaded");
  for (const nn::TorchParameter& p : nn::torch_parameters(*m)) {
    const Tensor t = f.dataset(name + "/params/" + p.name);
    EXPECT_EQ(t.shape(), p.shape) << p.name;
    nn::from_torch_layout(p, t.data<float>(), flat.data<float>() + m->slots()[p.slot].offset);
  }
  backend.copy_async(backend.compute_stream(), m->flat_parameters(), flat);
  m->refresh_compute_parameters();
  const Tensor input = on_device(backend, x, dtype);
  const Tensor labels = on_device(backend, f.dataset(name + "/labels", DType::i32), DType::i32);
  nn::SoftmaxCrossEntropy loss;
  loss.build(backend, batch, 10);
  GraphRun r;
  const Tensor& logits = m->forward(input, true);
  r.loss = loss.forward_and_read(logits, labels).mean_loss();
  m->backward(loss.backward(1.0f / static_cast<float>(batch)));
  r.logits = to_host(backend, logits);
  r.gradients = to_host(backend, m->flat_gradients());
  return r;
}

class GraphTwin : public ::testing::TestWithParam<std::tuple<std::string, DeviceKind>> {};

// Logits, loss and every weight gradient within fp32 tolerance of PyTorch's.
TEST_P(GraphTwin, MatchesPyTorchInFp32) {
  const auto& [name, kind] = GetParam();
  const auto backend = backend_of(kind);
  const GraphRun r = run_with_twin_weights(*backend, name, DType::f32);
  ReferenceFile f(kFile);
  const Tensor logits = f.dataset(name + "/logits");
  EXPECT_TRUE(tensors_close(r.logits.data(), logits.data<float>(), logits.numel(), 1e-4, 1e-5)) << "logits";
  EXPECT_NEAR(r.loss, f.scalar_double(name + "/loss"), 1e-5);
  auto m = nn::make_zoo_model(name, {28, 28, 1}, 10);
  size_t compared = 0;
  for (const nn::TorchParameter& p : nn::torch_parameters(*m)) {
    const Tensor ref = f.dataset(name + "/grads/" + p.name);
    std::vector<float> ours(static_cast<size_t>(ref.numel()));
    nn::to_torch_layout(p, r.gradients.data() + m->slots()[p.slot].offset, ours.data());
    EXPECT_TRUE(tensors_close(ours.data(), ref.data<float>(), ref.numel(), 1e-3, 1e-6)) << "d" << p.name;
    ++compared;
  }
  EXPECT_EQ(compared, m->slots().size());
}

// bf16 and f16 (Add's and Concat's kernels, the summed gradients in the compute type) stay near fp32.
TEST_P(GraphTwin, LowPrecisionStaysNearFp32) {
  const auto& [name, kind] = GetParam();
  const auto backend = backend_of(kind);
  const GraphRun ref = run_with_twin_weights(*backend, name, DType::f32);
  for (DType t : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(t));
    const GraphRun r = run_with_twin_weights(*backend, name, t);
    const double tol = t == DType::bf16 ? 5e-2 : 1e-2;
    EXPECT_TRUE(tensors_close(r.logits.data(), ref.logits.data(), static_cast<int64_t>(r.logits.size()), tol, tol));
    EXPECT_NEAR(r.loss, ref.loss, tol * ref.loss);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, GraphTwin,
                         ::testing::Combine(::testing::Values("resmlp", "branchnet"),
                                            ::testing::Values(DeviceKind::cpu, DeviceKind::sim)),
                         [](const auto& info) {
                           return std::get<0>(info.param) +
                                  (std::get<1>(info.param) == DeviceKind::cpu ? "_cpu" : "_sim");
                         });

TEST(GraphTwinOnDevices, SimulatedDeviceGivesTheCpuBitForBit) {
  for (const std::string name : {"resmlp", "branchnet"}) {
    const GraphRun a = run_with_twin_weights(*backend_of(DeviceKind::cpu), name, DType::f32);
    const GraphRun b = run_with_twin_weights(*backend_of(DeviceKind::sim), name, DType::f32);
    EXPECT_EQ(a.logits, b.logits) << name;
    EXPECT_EQ(a.gradients, b.gradients) << name;
  }
}

// Dense layers of 4 units on a [4] input, named by the caller.
std::string dense(nn::Model& m, std::vector<std::string> in, const std::string& name, int64_t units = 4) {
  return m.node<nn::Dense>(std::move(in), name, units);
}

TEST(GraphChecks, AddOfTwoShapesNamesTheNode) {
  nn::Model m("bad_add");
  const std::string a = dense(m, {nn::Model::input()}, "a", 3), b = dense(m, {nn::Model::input()}, "b", 5);
  m.node<nn::Add>({a, b}, "sum");
  const std::string e = error_of([&] { m.configure({4}); });
  EXPECT_NE(e.find("layer 'sum' (Add): inputs must have one shape, got [3] and [5]"), std::string::npos) << e;
}

TEST(GraphChecks, ConcatOfDifferentSizesNamesTheNode) {
  nn::Model m("bad_concat");
  const std::string a = m.node<nn::Conv2D>({nn::Model::input()}, "full", nn::Conv2DOptions{4, 3, 1, nn::Padding::same});
  const std::string b = m.node<nn::Conv2D>({nn::Model::input()}, "half", nn::Conv2DOptions{4, 3, 2, nn::Padding::same});
  m.node<nn::Concat>({a, b}, "cat");
  const std::string e = error_of([&] { m.configure({8, 8, 1}); });
  EXPECT_NE(e.find("layer 'cat' (Concatenate): inputs must agree in all but the last (channel) dimension, got "
                   "[8, 8, 4] and [4, 4, 4]"),
            std::string::npos)
      << e;
}

TEST(GraphChecks, ACycleIsNamed) {
  nn::Model m("cyclic");
  const std::string d = dense(m, {nn::Model::input()}, "d");
  m.node<nn::Add>({d, "b"}, "a");
  dense(m, {"a"}, "b");
  const std::string e = error_of([&] { m.configure({4}); });
  EXPECT_NE(e.find("model 'cyclic' has a cycle: "), std::string::npos) << e;
  EXPECT_TRUE(e.find("a -> b -> a") != std::string::npos || e.find("b -> a -> b") != std::string::npos) << e;
}

TEST(GraphChecks, AnUnusedOutputOrInputIsNamed) {
  nn::Model dangling("dangling");
  const std::string d = dense(dangling, {nn::Model::input()}, "d");
  dense(dangling, {nn::Model::input()}, "forgotten");
  dense(dangling, {d}, "out");
  std::string e = error_of([&] { dangling.configure({4}); });
  EXPECT_NE(e.find("the output of node 'forgotten' is used by no node and is not the model's output ('out')"),
            std::string::npos)
      << e;
  nn::Model no_input("no_input");
  dense(no_input, {"b"}, "a");
  dense(no_input, {"a"}, "b");
  e = error_of([&] { no_input.configure({4}); });
  EXPECT_NE(e.find("no node consumes the model input 'input'"), std::string::npos) << e;
}

TEST(GraphChecks, ANameConsumedButNeverDefinedIsNamed) {
  nn::Model m("undefined");
  const std::string d = dense(m, {nn::Model::input()}, "d");
  m.node<nn::Add>({d, "shortcut"}, "sum");
  const std::string e = error_of([&] { m.configure({4}); });
  EXPECT_NE(e.find("node 'sum' consumes 'shortcut', which no node defines"), std::string::npos) << e;
}

TEST(GraphChecks, ANameUsedTwiceIsNamed) {
  nn::Model m("twice");
  const std::string d = dense(m, {nn::Model::input()}, "fc");
  dense(m, {d}, "fc");
  const std::string e = error_of([&] { m.configure({4}); });
  EXPECT_NE(e.find("the name 'fc' is used twice (nodes 0 and 1)"), std::string::npos) << e;
}

TEST(GraphChecks, AMergeLayerWithOneInputIsNamed) {
  nn::Model m("lonely");
  const std::string d = dense(m, {nn::Model::input()}, "d");
  m.node<nn::Add>({d}, "sum");
  const std::string e = error_of([&] { m.configure({4}); });
  EXPECT_NE(e.find("layer 'sum' (Add) cannot take 1 inputs"), std::string::npos) << e;
}

// Declared out of order, run in topological order; ties go to the node declared first.
TEST(GraphOrder, TopologicalWithTiesByDeclaration) {
  nn::Model m("shuffled", nn::ParameterNaming::node);
  dense(m, {"sum"}, "out", 2);
  m.node<nn::Add>({"right", "left"}, "sum");
  dense(m, {nn::Model::input()}, "right");
  dense(m, {nn::Model::input()}, "left");
  m.set_output("out");
  m.configure({4});
  std::vector<std::string> order;
  for (const auto& l : m.layers()) order.push_back(l->name());
  EXPECT_EQ(order, (std::vector<std::string>{"right", "left", "sum", "out"}));
  EXPECT_EQ(m.producers(2), (std::vector<int>{0, 1}));
  EXPECT_EQ(m.slots().front().name, "out.weight");  // reverse execution order
  EXPECT_EQ(m.slots().back().name, "right.bias");
}

// Only nodes downstream of a parameter run backward; a node computes dx only where it leads back to one.
TEST(GraphOrder, InputGradientsAreAReachabilityQuestion) {
  nn::Model m("reach", nn::ParameterNaming::node);
  const std::string flat = m.node<nn::Flatten>({nn::Model::input()}, "flat");
  const std::string a = dense(m, {flat}, "a");
  m.node<nn::Add>({flat, a}, "sum");
  m.configure({2, 2});
  EXPECT_FALSE(m.runs_backward(0));
  EXPECT_FALSE(m.needs_input_gradient(1, 0));
  EXPECT_TRUE(m.runs_backward(2));
  EXPECT_FALSE(m.needs_input_gradient(2, 0));  // the Flatten's output leads to no parameter
  EXPECT_TRUE(m.needs_input_gradient(2, 1));
}

// x + fc(x) with the shortcut through an Identity gives what it gives without one, and a tensor read
// twice by one Add (x + x) gets both gradients.
TEST(GraphGradients, IdentityShortcutsAndRepeatedInputs) {
  const auto run = [](bool identity, bool twice) {
    nn::Model m("shortcut", nn::ParameterNaming::node);
    const std::string fc = dense(m, {nn::Model::input()}, "fc");
    const std::string skip = identity ? m.node<nn::Identity>({fc}, "skip") : fc;
    const std::string h = dense(m, {fc}, "h");
    m.node<nn::Add>(twice ? std::vector<std::string>{skip, skip, h} : std::vector<std::string>{skip, h}, "sum");
    m.configure({4});
    const auto backend = make_cpu_backend();
    m.build(*backend, 2);
    m.init_parameters(3);
    Tensor x({2, 4});
    for (int i = 0; i < 8; ++i) x.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.3f;
    Tensor dy({2, 4});
    for (int i = 0; i < 8; ++i) dy.data<float>()[i] = 0.05f * static_cast<float>(i % 3) - 0.02f;
    const Tensor& y = m.forward(x, true);
    std::vector<float> out(y.data<float>(), y.data<float>() + y.numel());
    m.backward(dy);
    out.insert(out.end(), m.flat_gradients().data<float>(), m.flat_gradients().data<float>() + m.parameter_count());
    return out;
  };
  EXPECT_EQ(run(true, false), run(false, false));
  const std::vector<float> once = run(false, false), twice = run(false, true);
  EXPECT_NE(once, twice);  // fc's output enters the sum twice: its gradient doubles
  EXPECT_EQ(run(true, true), twice);
}

// A convolution whose output a second node also reads keeps its pooling apart.
TEST(GraphBuild, PoolingIsAbsorbedOnlyWhereItIsTheProducersOneConsumer) {
  const auto build = [](bool shared) {
    auto m = std::make_unique<nn::Model>("pools", nn::ParameterNaming::node);
    const std::string c = m->node<nn::Conv2D>({nn::Model::input()}, "conv",
        nn::Conv2DOptions{6, 5, 1, nn::Padding::same, 1, true, nn::Activation::relu});
    const std::string p = m->node<nn::MaxPool2D>({c}, "pool", 2);
    if (shared) {
      const std::string q = m->node<nn::MaxPool2D>({c}, "pool_b", 2);
      m->node<nn::Add>({p, q}, "sum");
    }
    m->configure({8, 8, 1});
    return m;
  };
  const auto backend = make_cpu_backend();
  auto alone = build(false), shared = build(true);
  alone->build(*backend, 2);
  shared->build(*backend, 2);
  EXPECT_TRUE(static_cast<nn::Pool2D&>(*alone->layers()[1]).absorbed());
  EXPECT_FALSE(static_cast<nn::Pool2D&>(*shared->layers()[1]).absorbed());
  EXPECT_FALSE(static_cast<nn::Pool2D&>(*shared->layers()[2]).absorbed());
}

TEST(GraphSummary, GraphsShowWhatEachLayerIsConnectedTo) {
  const std::string s = nn::make_zoo_model("branchnet", {28, 28, 1}, 10)->summary();
  EXPECT_NE(s.find("Connected to"), std::string::npos) << s;
  EXPECT_NE(s.find("stem[0][0], cat[0][0]"), std::string::npos) << s;
  EXPECT_NE(s.find("branch_a[0][0], branch_b[0][0]"), std::string::npos) << s;
  const std::string chain = nn::make_zoo_model("lenet", {28, 28, 1}, 10)->summary();
  EXPECT_EQ(chain.find("Connected to"), std::string::npos) << chain;
}

TEST(GraphBuffers, BuffersAreNamedAndLaidOutApartFromParameters) {
  for (const nn::ParameterNaming naming : {nn::ParameterNaming::sequential, nn::ParameterNaming::node}) {
    nn::Model m("buffers", naming);
    m.emplace<nn::Dense>("fc", 3);
    m.emplace<scaletrain::testing::TrackingLayer>("track", 1.0);
    m.configure({4});
    ASSERT_EQ(m.buffer_slots().size(), 2u);
    const bool seq = naming == nn::ParameterNaming::sequential;
    EXPECT_EQ(m.buffer_slots()[0].name, seq ? "1.running_mean" : "track.running_mean");
    EXPECT_EQ(m.buffer_slots()[1].name, seq ? "1.num_batches_tracked" : "track.num_batches_tracked");
    EXPECT_EQ(m.parameter_count(), 4 * 3 + 3);  // the buffers are no parameters
    EXPECT_EQ(m.flat_gradients().numel(), m.parameter_count());
    EXPECT_EQ(m.flat_buffers(DType::f32).numel(), 3);
    EXPECT_EQ(m.flat_buffers(DType::i64).numel(), 1);
    const auto backend = make_cpu_backend();
    m.build(*backend, 2);
    m.init_parameters(5);
    backend->synchronize();
    for (int i = 0; i < 3; ++i) EXPECT_EQ(m.flat_buffers(DType::f32).data<float>()[i], 1.0f);
    EXPECT_EQ(m.flat_buffers(DType::i64).data<int64_t>()[0], 0);
    EXPECT_EQ(m.layers()[1]->buffers()[0].value.data<float>(), m.flat_buffers(DType::f32).data<float>());
  }
}

}  // namespace
