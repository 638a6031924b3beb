// Records the cpu backend's bf16 GEMM-shaped ops and times both ways of computing them
// (backend/cpu/bf16_gemm_shapes.hpp).
#include "scaletrain/backend/cpu/bf16_gemm_shapes.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

#include "scaletrain/core/half.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {
namespace {

// The operands of one op: x, w, y, dy, dx in bf16; the bias and the weight and bias gradients in f32.
struct GemmOperands {
  Tensor x, w, y, dy, dx, b, dw, db;
  bool bias = true;
};

Tensor bf16_pattern(int64_t n, const char* name) {
  Tensor t({n}, DType::bf16, name);
  for (int64_t i = 0; i < n; ++i) t.data<bf16>()[i] = float_to_bf16(static_cast<float>(i % 29) / 14.0f - 1.0f);
  return t;
}

GemmOperands operands(int64_t nx, int64_t nw, int64_t ny, int64_t channels, bool bias) {
  GemmOperands o;
  o.x = bf16_pattern(nx, "bf16 gemm probe x");
  o.w = bf16_pattern(nw, "bf16 gemm probe w");
  o.dy = bf16_pattern(ny, "bf16 gemm probe dy");
  o.y = Tensor({ny}, DType::bf16, "bf16 gemm probe y");
  o.dx = Tensor({nx}, DType::bf16, "bf16 gemm probe dx");
  o.b = Tensor::zeros({channels}, DType::f32, "bf16 gemm probe b");
  o.dw = Tensor({nw}, DType::f32, "bf16 gemm probe dw");
  o.db = Tensor({channels}, DType::f32, "bf16 gemm probe db");
  o.bias = bias;
  return o;
}

GemmOperands operands_of(const ConvShape& s) {
  const int64_t pixels = s.batch * s.in_h * s.in_w;
  return operands(pixels * s.in_c, s.out_c * s.in_c, pixels * s.out_c, s.out_c, s.bias);
}
GemmOperands operands_of(const InnerProductShape& s) {
  return operands(s.batch * s.in_features, s.out_features * s.in_features, s.batch * s.out_features, s.out_features,
                  s.bias);
}

// Seconds of one forward, backward_data and backward_weights of `op` on `o`.
template <class Op>
double time_passes(Op& op, GemmOperands& o) {
  const float* b = o.bias ? o.b.data<float>() : nullptr;
  float* db = o.bias ? o.db.data<float>() : nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  op.forward(o.x.raw(), o.w.raw(), b, o.y.raw());
  op.backward_data(o.dy.raw(), o.w.raw(), o.dx.raw());
  op.backward_weights(o.x.raw(), o.dy.raw(), o.dw.data<float>(), db);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Both ways of one shape, made and warmed up; `round` runs each once, in an order that alternates.
template <class Op>
class ShapeProbe {
 public:
  template <class Shape, class Make>
  ShapeProbe(const Shape& shape, const Make& make, Bf16GemmShapeTiming timing)
      : operands_(operands_of(shape)), bf16_(make(shape, false)), f32_(make(shape, true)), timing_(std::move(timing)) {
    time_passes(*bf16_, operands_);
    time_passes(*f32_, operands_);
    timing_.bf16_s = timing_.f32_s = std::numeric_limits<double>::infinity();
  }

  void round(int r) {
    const auto bf16 = [&] { timing_.bf16_s = std::min(timing_.bf16_s, time_passes(*bf16_, operands_)); };
    const auto f32 = [&] { timing_.f32_s = std::min(timing_.f32_s, time_passes(*f32_, operands_)); };
    if (r % 2 == 0) {
      bf16();
      f32();
    } else {
      f32();
      bf16();
    }
  }
  const Bf16GemmShapeTiming& timing() const { return timing_; }

 private:
  GemmOperands operands_;
  std::unique_ptr<Op> bf16_, f32_;
  Bf16GemmShapeTiming timing_;
};

}  // namespace

void Bf16GemmShapes::add(std::variant<ConvShape, InnerProductShape> shape, std::string name) {
  for (Entry& e : entries_)
    if (e.name == name) {
      ++e.count;
      return;
    }
  entries_.push_back(Entry{std::move(shape), std::move(name), 1});
}

void Bf16GemmShapes::record(const ConvShape& shape) { add(shape, shape.to_string()); }
void Bf16GemmShapes::record(const InnerProductShape& shape) { add(shape, shape.to_string()); }

// One shape at a time, so that only one shape's operands exist: each gets one timed round, and more
// while the time spent stays within its share of the budget.
std::vector<Bf16GemmShapeTiming> Bf16GemmShapes::time(const Bf16GemmFactories& make, int rounds,
                                                      double budget_s) const {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<Bf16GemmShapeTiming> out;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    const double share = budget_s * static_cast<double>(i + 1) / static_cast<double>(entries_.size());
    const auto time_shape = [&](const auto& shape, const auto& factory) {
      using Op = typename decltype(factory(shape, false))::element_type;
      ShapeProbe<Op> probe(shape, factory, Bf16GemmShapeTiming{e.name, e.count, 0, 0});
      for (int r = 0; r < std::max(rounds, 1) && (r == 0 || elapsed() <= share); ++r) probe.round(r);
      return probe.timing();
    };
    if (const auto* conv = std::get_if<ConvShape>(&e.shape)) out.push_back(time_shape(*conv, make.conv));
    else out.push_back(time_shape(std::get<InnerProductShape>(e.shape), make.inner_product));
  }
  return out;
}

}  // namespace scaletrain::cpu
