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

// The [H, W, C] shape a Dense layer's input was flattened from: its input's producer, or the first
// before it through layers that only pass values on (one input, no parameters, the shape kept:
// Dropout, activations, Identity), is a Flatten of an image. Empty otherwise.
Shape flattened_image(const Model& model, size_t dense) {
  int p = model.producers(dense).front();
  while (p != kModelInput) {
    const Layer& l = *model.layers()[static_cast<size_t>(p)];
    if (l.type() == "Flatten") return l.input_shape().size() == 3 ? l.input_shape() : Shape{};
    const bool passes_on = l.parameters().empty() && model.producers(static_cast<size_t>(p)).size() == 1 &&
                           l.input_shape() == l.output_shape();
    if (!passes_on) break;
    p = model.producers(static_cast<size_t>(p)).front();
  }
  return {};
}

}  // namespace

std::vector<TorchParameter> torch_parameters(const Model& model) {
  std::vector<TorchParameter> out;
  for (size_t l = 0; l < model.layers().size(); ++l) {
    const Layer& layer = *model.layers()[l];
    for (size_t i = 0; i < layer.parameters().size(); ++i) {
      const Parameter& p = layer.parameters()[i];
      TorchParameter t;
      t.slot = model.first_slot(l) + i;
      const ParameterSlot& slot = model.slots().at(t.slot);
      ST_CHECK(slot.layer == l && slot.index == i, "model ", model.name(), ": slot table out of order at layer ", l);
      t.name = slot.name;
      t.shape = p.shape;
      if (layer.type() == "Dense" && p.name == "weight") t.hwc = flattened_image(model, l);
      out.push_back(std::move(t));
    }
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
