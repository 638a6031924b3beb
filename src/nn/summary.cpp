// Model::summary(): Keras' model.summary() table with a forward FLOPs-per-sample column.
#include <iomanip>
#include <sstream>

#include "scaletrain/nn/model.hpp"

namespace scaletrain::nn {
namespace {

std::string with_commas(int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  if (v < 0) out.push_back('-');
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string keras_shape(const Shape& s) {
  std::string out = "(None";
  for (int64_t d : s) {
    out.append(", ");
    out.append(std::to_string(d));
  }
  out.push_back(')');
  return out;
}

std::string human_flops(double f) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  if (f >= 1e9) os << f / 1e9 << " G";
  else if (f >= 1e6) os << f / 1e6 << " M";
  else if (f >= 1e3) os << f / 1e3 << " K";
  else os << std::setprecision(0) << f << " ";
  return os.str();
}

}  // namespace

std::vector<std::string> Model::implementations() const {
  std::vector<std::string> lines;
  for (const auto& l : layers_) {
    const std::string how = l->implementation();
    if (!how.empty()) lines.push_back(l->name() + " (" + l->type() + "): " + how);
  }
  return lines;
}

std::string Model::summary() const {
  std::ostringstream os;
  const std::string rule(90, '_');
  const std::string bold(90, '=');
  os << "Model: \"" << name_ << "\"\n" << rule << "\n";
  os << std::left << std::setw(40) << " Layer (type)" << std::setw(26) << "Output Shape" << std::setw(12) << "Param #"
     << "FLOPs/sample\n";
  os << bold << "\n";
  os << std::left << std::setw(40) << " input (InputLayer)" << std::setw(26) << keras_shape(input_shape_)
     << std::setw(12) << 0 << "0\n";
  for (const auto& l : layers_) {
    std::string label(1, ' ');
    label.append(l->name()).append(" (").append(l->type()).append(")");
    os << std::left << std::setw(40) << label << std::setw(26)
       << keras_shape(l->output_shape()) << std::setw(12) << l->parameter_count()
       << human_flops(static_cast<double>(l->flops_per_sample())) << "\n";
  }
  os << bold << "\n";
  os << "Total params: " << with_commas(parameter_count()) << "\n";
  os << "Trainable params: " << with_commas(parameter_count()) << "\n";
  os << "Non-trainable params: 0\n";
  os << "Forward FLOPs per sample: " << human_flops(static_cast<double>(flops_per_sample())) << "FLOP ("
     << with_commas(flops_per_sample()) << ")\n";
  os << rule << "\n";
  return os.str();
}

}  // namespace scaletrain::nn
