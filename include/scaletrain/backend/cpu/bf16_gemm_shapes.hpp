// The bf16 GEMM-shaped ops the cpu backend made (1x1 convolutions, inner products), and the timing of
// the two ways it can compute each (oneDNN's bf16 kernel, or the f32 GEMM on widened operands) that
// CpuBackend's Bf16GemmTuning reports.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/backend/ops.hpp"

namespace scaletrain::cpu {

// Make the op of a bf16 shape one way: on_f32, the f32 GEMM on widened operands; else oneDNN's bf16 kernel.
struct Bf16GemmFactories {
  std::function<std::unique_ptr<ConvOp>(const ConvShape&, bool on_f32)> conv;
  std::function<std::unique_ptr<InnerProductOp>(const InnerProductShape&, bool on_f32)> inner_product;
};

class Bf16GemmShapes {
 public:
  // One op of this shape was made (shapes made again count again).
  void record(const ConvShape& shape);
  void record(const InnerProductShape& shape);
  // Bf16GemmTuning::time_bf16_gemm_shapes, with the ops from `make`.
  std::vector<Bf16GemmShapeTiming> time(const Bf16GemmFactories& make, int rounds, double budget_s) const;

 private:
  struct Entry {
    std::variant<ConvShape, InnerProductShape> shape;
    std::string name;
    int count = 0;
  };
  void add(std::variant<ConvShape, InnerProductShape> shape, std::string name);
  std::vector<Entry> entries_;
};

}  // namespace scaletrain::cpu
