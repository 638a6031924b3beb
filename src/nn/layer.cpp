// Layer base: parameter and buffer declaration and layer-named shape errors.
#include "scaletrain/nn/layer.hpp"

namespace scaletrain::nn {

int64_t Layer::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += shape_numel(p.shape);
  return n;
}

Parameter& Layer::declare(std::string name, Shape shape, Init init, int64_t fan_in, int64_t fan_out) {
  Parameter p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  p.init = init;
  p.fan_in = fan_in;
  p.fan_out = fan_out;
  params_.push_back(std::move(p));
  return params_.back();
}

Buffer& Layer::declare_buffer(std::string name, Shape shape, DType dtype, double initial) {
  ST_CHECK(dtype == DType::f32 || dtype == DType::i64, "layer '", name_, "': buffer ", name, " must be f32 or i64");
  buffers_.push_back(Buffer{std::move(name), std::move(shape), dtype, initial, Tensor()});
  return buffers_.back();
}

Tensor Layer::buffer(const Shape& shape, const std::string& what, DType dtype) {
  ST_CHECK(backend_ != nullptr, "layer '", name_, "' used before Model::build attached a backend");
  return backend_->empty(shape, dtype, name_ + "." + what);
}

Shape with_batch(int64_t batch, const Shape& sample) {
  Shape r{batch};
  r.insert(r.end(), sample.begin(), sample.end());
  return r;
}

const Tensor& no_gradient() {
  static const Tensor undefined;
  return undefined;
}

void Layer::shape_error(const std::string& what) const {
  ST_FAIL("layer '", name_, "' (", type(), "): ", what);
}

}  // namespace scaletrain::nn
