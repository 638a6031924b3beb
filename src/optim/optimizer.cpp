// What every optimizer shares: the kind names of optimizer.name, the categories of
// optimizer.no_decay, the per-tensor options and their update ranges, and restoring a state buffer.
#include <algorithm>
#include <cstring>
#include <tuple>
#include <type_traits>

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/core/join.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {

OptimizerKind parse_optimizer_kind(const std::string& name) {
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adamw") return OptimizerKind::adamw;
  if (name == "lars") return OptimizerKind::lars;
  if (name == "lamb") return OptimizerKind::lamb;
  ST_FAIL("optimizer.name = '", name, "' is not one of sgd, adamw, lars, lamb");
}

std::string optimizer_kind_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::adamw: return "adamw";
    case OptimizerKind::lars: return "lars";
    case OptimizerKind::lamb: break;
  }
  return "lamb";
}

const std::vector<std::string>& no_decay_category_names() {
  static const std::vector<std::string> names = {"bias", "norm", "embedding"};
  return names;
}

NoDecayCategory parse_no_decay_category(const std::string& name) {
  if (name == "bias") return NoDecayCategory::bias;
  if (name == "norm") return NoDecayCategory::norm;
  if (name == "embedding") return NoDecayCategory::embedding;
  ST_FAIL("optimizer.no_decay: '", name, "' is not one of ", join(no_decay_category_names()));
}

std::string no_decay_category_name(NoDecayCategory c) {
  switch (c) {
    case NoDecayCategory::bias: return "bias";
    case NoDecayCategory::norm: return "norm";
    case NoDecayCategory::embedding: break;
  }
  return "embedding";
}

TensorOptions tensor_options(const ParameterTensor& tensor, const std::vector<NoDecayCategory>& no_decay) {
  const size_t dot = tensor.name.rfind('.');
  const std::string last = dot == std::string::npos ? tensor.name : tensor.name.substr(dot + 1);
  TensorOptions o;
  for (NoDecayCategory c : no_decay) {
    if (c == NoDecayCategory::bias && last == "bias") o.weight_decay = false;
    if (c == NoDecayCategory::norm && tensor.norm) o.weight_decay = false;
    if (c == NoDecayCategory::embedding && tensor.embedding) o.weight_decay = false;
  }
  return o;
}

UpdateRanges::UpdateRanges(std::vector<ParameterTensor> tensors, const std::vector<NoDecayCategory>& no_decay) {
  if (tensors.empty()) {
    ST_CHECK(no_decay.empty(), "optimizer.no_decay needs the parameter tensors it applies to; none were given");
    whole_buffer_ = true;
    return;
  }
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const ParameterTensor& a, const ParameterTensor& b) { return a.offset < b.offset; });
  for (const ParameterTensor& t : tensors) {
    ST_CHECK(t.count >= 0, "parameter tensor '", t.name, "' has a negative length ", t.count);
    ST_CHECK(t.offset == covered_, "parameter tensor '", t.name, "' starts at element ", t.offset,
             " of the flat buffer, but the tensors before it end at element ", covered_,
             " (the tensors must tile the buffer without gaps or overlaps)");
    covered_ += t.count;
    if (t.count == 0) continue;
    const TensorOptions o = tensor_options(t, no_decay);
    if (!ranges_.empty() && ranges_.back().options.weight_decay == o.weight_decay)
      ranges_.back().count += t.count;
    else
      ranges_.push_back(UpdateRange{t.offset, t.count, o});
  }
}

const std::vector<UpdateRange>& UpdateRanges::of(int64_t numel) {
  if (whole_buffer_) {
    if (ranges_.empty() || ranges_.front().count != numel) ranges_ = {UpdateRange{0, numel, TensorOptions{}}};
    return ranges_;
  }
  ST_CHECK(numel == covered_, "the optimizer's parameter tensors cover ", covered_, " elements, but the buffer has ",
           numel);
  return ranges_;
}

void Optimizer::step(Tensor& params, const Tensor& grads, float lr) {
  // The device's decision for a clean step at a constant `lr`, made here on the host.
  kernels::StepState s;
  s.updates = static_cast<double>(steps_);
  kernels::StepRules rules;
  rules.lr.base_lr = lr;
  std::tie(rules.beta1, rules.beta2) = bias_correction_betas();
  const double clean[2] = {0.0, 0.0};
  kernels::DecideStep{&s, clean, kernels::VerdictLayout{0}, rules}(0);
  if (host_step_state_.numel() == 0)
    host_step_state_ = backend_.empty({kernels::kStepStateDoubles}, DType::f64, "optimizer step state (host steps)");
  Tensor host({kernels::kStepStateDoubles}, DType::f64, "optimizer step state (host copy)");
  std::memcpy(host.raw(), &s, sizeof s);
  backend_.copy_async(backend_.compute_stream(), host_step_state_, host);
  backend_.compute_stream().synchronize();  // the host copy goes out of scope
  step_on_device(params, grads, reinterpret_cast<const kernels::StepState*>(host_step_state_.device_data<double>()),
                 false, nullptr);
  ++steps_;
}

kernels::UpdateRangeTable Optimizer::range_table(const std::vector<UpdateRange>& ranges) {
  const auto n = static_cast<int64_t>(ranges.size());
  if (ranges != table_of_) {
    table_ends_host_ = Tensor({n}, DType::i64, "optimizer range ends (host)");
    table_decayed_host_ = Tensor({n}, DType::i32, "optimizer range decay (host)");
    for (int64_t r = 0; r < n; ++r) {
      const UpdateRange& u = ranges[static_cast<size_t>(r)];
      table_ends_host_.data<int64_t>()[r] = u.offset + u.count;
      table_decayed_host_.data<int32_t>()[r] = u.options.weight_decay ? 1 : 0;
    }
    table_ends_ = backend_.empty({n}, DType::i64, "optimizer range ends");
    table_decayed_ = backend_.empty({n}, DType::i32, "optimizer range decay");
    backend_.copy_async(backend_.compute_stream(), table_ends_, table_ends_host_);
    backend_.copy_async(backend_.compute_stream(), table_decayed_, table_decayed_host_);
    table_of_ = ranges;
  }
  return kernels::UpdateRangeTable{table_ends_.device_data<int64_t>(), table_decayed_.device_data<int32_t>(), n};
}

template <class Update>
void Optimizer::launch_update(const char* label, const Update& update, int64_t n,
                              const std::vector<UpdateRange>& ranges, float weight_decay,
                              const kernels::StepState* state, bool unscale, const Tensor* compute) {
  if (ranges.empty()) return;
  const kernels::UpdateRangeTable table = range_table(ranges);
  dispatch_compute(compute, n, [&](auto* out) {
    using C = std::remove_pointer_t<decltype(out)>;
    launch(backend_.compute_stream(), label, n,
           kernels::MultiTensorUpdate<Update, C>{update, state, table, weight_decay, unscale, out});
  });
}

template void Optimizer::launch_update<kernels::SgdUpdate>(const char*, const kernels::SgdUpdate&, int64_t,
                                                           const std::vector<UpdateRange>&, float,
                                                           const kernels::StepState*, bool, const Tensor*);
template void Optimizer::launch_update<kernels::AdamWUpdate>(const char*, const kernels::AdamWUpdate&, int64_t,
                                                             const std::vector<UpdateRange>&, float,
                                                             const kernels::StepState*, bool, const Tensor*);

Tensor restore_buffer(Backend& backend, const std::vector<float>& values, int64_t numel, const std::string& name) {
  ST_CHECK(static_cast<int64_t>(values.size()) == numel, name, ": the checkpoint holds ", values.size(),
           " values for ", numel, " parameters");
  Tensor device = backend.empty({numel}, DType::f32, name);
  backend.upload(device, values);
  return device;
}

}  // namespace scaletrain::optim
