// Parsing and naming of Precision.
#include "scaletrain/core/precision.hpp"

#include "scaletrain/core/error.hpp"

namespace scaletrain {

Precision parse_precision(const std::string& name) {
  if (name == "fp32" || name == "f32" || name == "float32") return Precision::fp32;
  if (name == "bf16" || name == "bfloat16") return Precision::bf16;
  if (name == "fp16" || name == "f16" || name == "float16") return Precision::fp16;
  ST_FAIL("precision '", name, "' is not one of fp32, bf16, fp16");
}

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

}  // namespace scaletrain
