// What every optimizer shares: the kind names of optimizer.name, and restoring a state buffer.
#include "scaletrain/core/error.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {

OptimizerKind parse_optimizer_kind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adamw") return OptimizerKind::adamw;
  ST_FAIL("optimizer.name = '", name, "' is not one of sgd, adamw");
}

std::string optimizer_kind_name(OptimizerKind k) { return k == OptimizerKind::sgd ? "sgd" : "adamw"; }

Tensor restore_buffer(Backend& backend, const std::vector<float>& values, int64_t numel, const std::string& name) {
  ST_CHECK(static_cast<int64_t>(values.size()) == numel, name, ": the checkpoint holds ", values.size(),
           " values for ", numel, " parameters");
  Tensor device = backend.empty({numel}, DType::f32, name);
  backend.upload(device, values);
  return device;
}

}  // namespace scaletrain::optim
