// GPU test: the zoo's graph models (resmlp: residual Adds; branchnet: Concat, Add, a tensor read by
// three nodes) on the CUDA backend against the CPU backend with the same weights, input and logit
// gradient: logits and the flat gradients (Add's and Concat's kernels, the gradients the Model sums
// on the device) agree within a tolerance per compute type.
#include <cmath>
#include <random>
#include <vector>

#include "cuda/cuda_test_support.hpp"
#include "scaletrain/core/half.hpp"
#include "scaletrain/nn/zoo.hpp"
#include "support/layer_harness.hpp"

namespace scaletrain::testing {
namespace {

struct GraphRun {
  std::vector<float> logits, grads;
};

Tensor host_input(const std::vector<float>& v, const Shape& shape, DType dtype) {
  Tensor t(shape, dtype, "x (host)");
  for (size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32) t.data<float>()[i] = v[i];
    else if (dtype == DType::bf16) t.data<bf16>()[i] = from_float<bf16>(v[i]);
    else t.data<f16>()[i] = from_float<f16>(v[i]);
  }
  return t;
}

GraphRun run_graph(Backend& backend, const std::string& name, DType dtype, int64_t batch, const std::vector<float>& x,
                   const std::vector<float>& dy) {
  auto m = nn::make_zoo_model(name, {28, 28, 1}, 10);
  m->build(backend, batch, dtype);
  m->init_parameters(11);
  const Shape xs{batch, 28, 28, 1};
  const Tensor xh = host_input(x, xs, dtype);
  Tensor xd = backend.empty(xs, dtype, "x");
  backend.copy_async(backend.compute_stream(), xd, xh);
  const Tensor& logits = m->forward(xd, true);
  Tensor dyd = backend.empty(logits.shape(), DType::f32, "dy");
  backend.upload(dyd, dy);
  m->backward(dyd);
  GraphRun r;
  const Tensor yh = backend.download(logits);
  r.logits.assign(yh.data<float>(), yh.data<float>() + yh.numel());
  const Tensor gh = backend.download(m->flat_gradients());
  r.grads.assign(gh.data<float>(), gh.data<float>() + gh.numel());
  return r;
}

class CudaGraphs : public CudaTest, public ::testing::WithParamInterface<DType> {};

TEST_P(CudaGraphs, GraphModelsMatchTheCpuBackend) {
  const DType dtype = GetParam();
  const double rtol = dtype == DType::f32 ? 1e-4 : (dtype == DType::bf16 ? 5e-2 : 1e-2);
  const double atol = dtype == DType::f32 ? 1e-5 : (dtype == DType::bf16 ? 5e-2 : 1e-2);
  auto cpu = make_cpu_backend(1);
  const int64_t batch = 4;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(batch * 28 * 28)), dy(static_cast<size_t>(batch * 10));
  for (float& v : x) v = u(rng);
  for (float& v : dy) v = u(rng) / static_cast<float>(batch);
  for (const std::string name : {"resmlp", "branchnet"}) {
    SCOPED_TRACE(name + " in " + std::string(dtype_name(dtype)));
    const GraphRun want = run_graph(*cpu, name, dtype, batch, x, dy);
    const GraphRun got = run_graph(*backend, name, dtype, batch, x, dy);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    EXPECT_TRUE(tensors_close(got.logits.data(), want.logits.data(), static_cast<int64_t>(want.logits.size()), rtol,
                              atol))
        << "logits";
    ASSERT_EQ(got.grads.size(), want.grads.size());
    EXPECT_TRUE(tensors_close(got.grads.data(), want.grads.data(), static_cast<int64_t>(want.grads.size()), rtol,
                              atol * std::sqrt(static_cast<double>(x.size()))))
        << "gradients";
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaGraphs, ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace scaletrain::testing
