// Text forms of the operator shapes, for error messages and logs.
#include "scaletrain/backend/ops.hpp"

#include <sstream>

namespace scaletrain {

std::string ConvShape::to_string() const {
  std::ostringstream os;
  os << "conv{batch " << batch << ", in " << in_h << "x" << in_w << "x" << in_c << ", out_c " << out_c << ", kernel "
     << kernel_h << "x" << kernel_w << ", stride " << stride_h << "x" << stride_w << ", pad " << pad_top << ","
     << pad_left << "," << pad_bottom << "," << pad_right << ", groups " << groups << (bias ? ", bias" : "") << ", " << dtype_name(dtype) << "}";
  return os.str();
}

std::string InnerProductShape::to_string() const {
  std::ostringstream os;
  os << "inner_product{batch " << batch << ", in " << in_features << ", out " << out_features << (bias ? ", bias" : "")
     << ", " << dtype_name(dtype) << "}";
  return os.str();
}

std::string PoolShape::to_string() const {
  std::ostringstream os;
  os << (kind == PoolKind::max ? "max_pool" : "avg_pool") << "{batch " << batch << ", in " << in_h << "x" << in_w << "x"
     << channels << ", kernel " << kernel_h << "x" << kernel_w << ", stride " << stride_h << "x" << stride_w << ", pad "
     << pad_top << "," << pad_left << "," << pad_bottom << "," << pad_right << ", " << dtype_name(dtype) << "}";
  return os.str();
}

}  // namespace scaletrain
