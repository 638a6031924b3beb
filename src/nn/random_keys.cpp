// RandomKeys: the keys of a layer's random draws (nn/random_keys.hpp).
#include "scaletrain/nn/random_keys.hpp"

namespace scaletrain::nn {

void RandomKeys::build(Backend& backend, Stream& stream, int64_t batch, const std::string& layer) {
  Tensor rows({batch}, DType::i64, layer + ".rows");
  for (int64_t r = 0; r < batch; ++r) rows.data<int64_t>()[r] = r;
  row_index_ = backend.empty({batch}, DType::i64, layer + ".row_index");
  backend.copy_async(stream, row_index_, rows);  // the queued copy keeps `rows` alive
  step_zero_ = backend.empty({1}, DType::f64, layer + ".step_zero");
  backend.fill_zero_async(stream, step_zero_);
  set(seed_, nullptr, Tensor());
}

void RandomKeys::set(uint64_t seed, const double* step, const Tensor& sample_index) {
  seed_ = seed;
  step_ = step ? step : (step_zero_.defined() ? step_zero_.device_data<double>() : nullptr);
  sample_index_ = sample_index.defined() ? sample_index : row_index_;
}

}  // namespace scaletrain::nn
