// What every optimizer shares: the kind names of optimizer.name, and restoring a state buffer.
#include <algorithm>

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
  Tensor host({numel}, DType::f32, name + " (host)");
  std::copy(values.begin(), values.end(), host.data<float>());
  Tensor device = backend.empty({numel}, DType::f32, name);
  backend.copy_async(backend.compute_stream(), device, host);
  backend.compute_stream().synchronize();  // the host copy goes out of scope
  return device;
}

}  // namespace scaletrain::optim
