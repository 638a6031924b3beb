// The GEMM-shaped operators of a bf16 model (dense layers, 1x1 convolutions) on a backend that can run
// them two ways (cpu: oneDNN's bf16 kernels, or f32 GEMMs on operands widened from bf16). The backend
// records the shapes it makes and times both ways at them; train/bf16_gemm_choice.hpp decides.
#pragma once
#include <string>
#include <vector>

#include "scaletrain/backend/backend.hpp"

namespace scaletrain {

// Both ways timed at one shape: forward, backward_data and backward_weights of one op, best of the rounds.
struct Bf16GemmShapeTiming {
  std::string shape;  // ConvShape::to_string or InnerProductShape::to_string
  int count = 1;      // ops of this shape the backend made
  double bf16_s = 0;  // oneDNN's bf16 kernels
  double f32_s = 0;   // f32 GEMM on widened operands
};

class Bf16GemmTuning {
 public:
  virtual ~Bf16GemmTuning() = default;
  // How the bf16 GEMM-shaped ops made from now on compute: bf16 or f32 (never automatic).
  virtual Bf16GemmCompute bf16_gemm() const = 0;
  // bf16 or f32; ops made before the call keep their way.
  virtual void set_bf16_gemm(Bf16GemmCompute compute) = 0;
  // Times both ways at every bf16 GEMM shape made so far, one shape at a time: each op warmed up once,
  // then rounds alternating the two ways, at least one and at most `rounds`, further rounds only while
  // the time spent stays within the shape's share of `budget_s`.
  virtual std::vector<Bf16GemmShapeTiming> time_bf16_gemm_shapes(int rounds, double budget_s) = 0;
};

}  // namespace scaletrain
