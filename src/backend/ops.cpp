// Text forms of the operator shapes, for error messages and logs, and their validity checks.
#include "scaletrain/backend/ops.hpp"

#include <sstream>

#include "scaletrain/core/error.hpp"

namespace scaletrain {

std::string ConvShape::to_string() const {
  std::ostringstream os;
  os << "conv{batch " << batch << ", in " << in_h << "x" << in_w << "x" << in_c << ", out_c " << out_c << ", kernel "
     << kernel_h << "x" << kernel_w << ", stride " << stride_h << "x" << stride_w << ", pad " << pad_top << ","
     << pad_left << "," << pad_bottom << "," << pad_right << ", groups " << groups << (bias ? ", bias" : "") << ", "
     << dtype_name(dtype) << "}";
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

void ConvShape::validate() const {
  const ConvShape& s = *this;
  ST_CHECK(s.batch > 0 && s.in_c > 0 && s.out_c > 0 && s.in_h > 0 && s.in_w > 0 && s.kernel_h > 0 && s.kernel_w > 0 &&
               s.stride_h > 0 && s.stride_w > 0 && s.groups > 0,
           "invalid convolution ", s.to_string(),
           ": batch, sizes, channels, kernel, stride and groups must be positive");
  ST_CHECK(s.pad_top >= 0 && s.pad_left >= 0 && s.pad_bottom >= 0 && s.pad_right >= 0, "invalid convolution ",
           s.to_string(), ": padding must not be negative");
  ST_CHECK(s.in_c % s.groups == 0 && s.out_c % s.groups == 0, "invalid convolution ", s.to_string(),
           ": in_c and out_c must be divisible by groups");
  ST_CHECK(s.in_h + s.pad_top + s.pad_bottom >= s.kernel_h && s.in_w + s.pad_left + s.pad_right >= s.kernel_w,
           "invalid convolution ", s.to_string(), ": the kernel is larger than the padded input");
}

void PoolShape::validate() const {
  const PoolShape& s = *this;
  ST_CHECK(s.batch > 0 && s.channels > 0 && s.in_h > 0 && s.in_w > 0 && s.kernel_h > 0 && s.kernel_w > 0 &&
               s.stride_h > 0 && s.stride_w > 0,
           "invalid pooling ", s.to_string(), ": batch, sizes, channels, kernel and stride must be positive");
  ST_CHECK(s.pad_top >= 0 && s.pad_left >= 0 && s.pad_bottom >= 0 && s.pad_right >= 0, "invalid pooling ",
           s.to_string(), ": padding must not be negative");
  ST_CHECK(s.pad_top < s.kernel_h && s.pad_bottom < s.kernel_h && s.pad_left < s.kernel_w && s.pad_right < s.kernel_w,
           "invalid pooling ", s.to_string(), ": padding must be smaller than the kernel");
  ST_CHECK(s.in_h + s.pad_top + s.pad_bottom >= s.kernel_h && s.in_w + s.pad_left + s.pad_right >= s.kernel_w,
           "invalid pooling ", s.to_string(), ": the kernel is larger than the padded input");
}

}  // namespace scaletrain
