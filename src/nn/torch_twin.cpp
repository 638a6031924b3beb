// State-dict names and layouts of the PyTorch twin (nn/torch_twin.hpp).
#include "scaletrain/nn/torch_twin.hpp"

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

namespace {

// Calls f(our_index, torch_index) for every element: column (h*W + w)*C + c of a [rows, H*W*C]
// matrix in HWC order is column (c*H + h)*W + w in CHW order; without hwc, the indices agree.
template <class F>
void for_each_element(const TorchParameter& p, F f) {
  const int64_t n = product(p.shape);
  if (p.hwc.empty()) {
    for (int64_t i = 0; i < n; ++i) f(i, i);
    return;
  }
  const int64_t H = p.hwc[0], W = p.hwc[1], C = p.hwc[2], cols = H * W * C, rows = n / cols;
  ST_CHECK(p.shape.size() == 2 && p.shape[1] == cols, p.name, ": expected [rows, ", cols, "] for an HWC flatten");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) f(r * cols + (h * W + w) * C + c, r * cols + (c * H + h) * W + w);
}

}  // namespace

void to_torch_layout(const TorchParameter& p, const float* ours, float* torch) {
  for_each_element(p, [&](int64_t o, int64_t t) { torch[t] = ours[o]; });
}

void from_torch_layout(const TorchParameter& p, const float* torch, float* ours) {
  for_each_element(p, [&](int64_t o, int64_t t) { ours[o] = torch[t]; });
}

}  // namespace scaletrain::nn
