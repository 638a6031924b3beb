// Model::summary(): Keras' model.summary() table with a forward FLOPs-per-sample column, and Keras'
// "Connected to" column where the model is not a chain.
#include <algorithm>
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

bool Model::is_chain() const {
  for (size_t i = 0; i < layers_.size(); ++i) {
    const auto& p = graph_.producers.at(i);
    if (p.size() != 1 || p[0] != static_cast<int>(i) - 1) return false;
  }
  return true;
}

// Keras' "Connected to": the producing nodes, as "stem[0][0], cat[0][0]".
std::string Model::connected_to(size_t layer) const {
  std::string out;
  for (int p : graph_.producers.at(layer)) {
    out += out.empty() ? "" : ", ";
    out += (p == kModelInput ? input() : layers_[static_cast<size_t>(p)]->name()) + "[0][0]";
  }
  return out;
}

std::string Model::summary() const {
  const bool graph = !is_chain();
  // The layer column fits the longest " name (Type)" and a blank (at least Keras' 40 characters).
  size_t label_width = 40;
  for (const LayerPtr& l : layers_) label_width = std::max(label_width, l->name().size() + l->type().size() + 5);
  const size_t width = (graph ? 120 : 90) + (label_width - 40);
  std::ostringstream os;
  const std::string rule(width, '_');
  const std::string bold(width, '=');
  const auto row = [&](const std::string& label, const Shape& shape, int64_t params, const std::string& flops,
                       const std::string& inputs) {
    os << std::left << std::setw(static_cast<int>(label_width)) << label << std::setw(26) << keras_shape(shape) << std::setw(12) << params;
    if (graph) os << std::setw(14) << flops << inputs << "\n";
    else os << flops << "\n";
  };
  os << "Model: \"" << name_ << "\"\n" << rule << "\n";
  os << std::left << std::setw(static_cast<int>(label_width)) << " Layer (type)" << std::setw(26) << "Output Shape" << std::setw(12) << "Param #";
  if (graph) os << std::setw(14) << "FLOPs/sample" << "Connected to\n";
  else os << "FLOPs/sample\n";
  os << bold << "\n";
  row(std::string(" input (InputLayer)"), input_shape_, 0, "0", "");
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = *layers_[i];
    std::string label(1, ' ');
    label.append(l.name()).append(" (").append(l.type()).append(")");
    row(label, l.output_shape(), l.parameter_count(),
        human_flops(static_cast<double>(l.flops_per_sample())), connected_to(i));
  }
  os << bold << "\n";
  os << "Total params: " << with_commas(parameter_count()) << "\n";
  os << "Trainable params: " << with_commas(parameter_count()) << "\n";
  os << "Non-trainable params: 0\n";
  // Buffers are model state but not parameters (PyTorch's count, which the totals above follow;
  // Keras would count BatchNorm's moving statistics as non-trainable parameters).
  int64_t buffer_elements = 0;
  for (const BufferSlot& b : buffer_slots_) buffer_elements += b.count;
  if (!buffer_slots_.empty())
    os << "Buffers: " << with_commas(buffer_elements) << " values in " << buffer_slots_.size()
       << " tensors (running statistics and counters; checkpointed, not trained)\n";
  os << "Forward FLOPs per sample: " << human_flops(static_cast<double>(flops_per_sample())) << "FLOP ("
     << with_commas(flops_per_sample()) << ")\n";
  os << rule << "\n";
  return os.str();
}

}  // namespace scaletrain::nn
