// State-dict names and layouts of the PyTorch twin (nn/torch_twin.hpp).
#include "scaletrain/nn/torch_twin.hpp"

#include <cstring>

#include "scaletrain/core/error.hpp"

namespace scaletrain::nn {
namespace {

int64_t product(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The slot that holds parameter `index` of layer `layer`.
size_t slot_of(const Model& model, size_t layer, size_t index) {
  const size_t first = model.first_slot(layer);
  const ParameterSlot& s = model.slots().at(first + index);
  ST_CHECK(s.layer == layer && s.index == index, "model ", model.name(), ": slot table out of order at layer ", layer);
  return first + index;
}

}  // namespace

std::vector<TorchParameter> torch_parameters(const Model& model) {
  std::vector<TorchParameter> out;
  int module = 0;
  Shape flattened_hwc;  // set by a Flatten of [H, W, C], consumed by the next layer with parameters
  for (size_t l = 0; l < model.layers().size(); ++l) {
    const Layer& layer = *model.layers()[l];
    if (layer.type() == "Flatten" && layer.input_shape().size() == 3) flattened_hwc = layer.input_shape();
    for (size_t i = 0; i < layer.parameters().size(); ++i) {
      const Parameter& p = layer.parameters()[i];
      const TorchParameterPlace place = layer.torch_place(i);
      TorchParameter t;
      t.name = std::to_string(module + place.module_offset) + "." + place.name;
      t.shape = p.shape;
      t.slot = slot_of(model, l, i);
      if (layer.type() == "Dense" && p.name == "weight" && !flattened_hwc.empty()) t.hwc = flattened_hwc;
      out.push_back(std::move(t));
    }
    if (!layer.parameters().empty()) flattened_hwc.clear();
    module += layer.torch_module_count();
  }
  return out;
}

// Column j of a [rows, H*W*C] matrix in HWC order is column (c*H + h)*W + w in CHW order.
void to_torch_layout(const TorchParameter& p, const float* ours, float* torch) {
  const int64_t n = product(p.shape);
  if (p.hwc.empty()) {
    std::memcpy(torch, ours, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const int64_t H = p.hwc[0], W = p.hwc[1], C = p.hwc[2], cols = H * W * C, rows = n / cols;
  ST_CHECK(p.shape.size() == 2 && p.shape[1] == cols, p.name, ": expected [rows, ", cols, "] for an HWC flatten");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) torch[r * cols + (c * H + h) * W + w] = ours[r * cols + (h * W + w) * C + c];
}

void from_torch_layout(const TorchParameter& p, const float* torch, float* ours) {
  const int64_t n = product(p.shape);
  if (p.hwc.empty()) {
    std::memcpy(ours, torch, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const int64_t H = p.hwc[0], W = p.hwc[1], C = p.hwc[2], cols = H * W * C, rows = n / cols;
  ST_CHECK(p.shape.size() == 2 && p.shape[1] == cols, p.name, ": expected [rows, ", cols, "] for an HWC flatten");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) ours[r * cols + (h * W + w) * C + c] = torch[r * cols + (c * H + h) * W + w];
}

}  // namespace scaletrain::nn
