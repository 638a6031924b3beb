// The per-tensor tables and squared sums of LARS and LAMB (optim/tensor_norms.hpp).
#include "scaletrain/optim/tensor_norms.hpp"

#include <algorithm>
#include <utility>

#include "scaletrain/core/error.hpp"

namespace scaletrain::optim {

TrustFlags trust_flags(const ParameterTensor& tensor, bool exclude_bias_norm, const std::vector<NoDecayCategory>& no_decay) {
  TrustFlags f;
  f.decayed = tensor_options(tensor, no_decay).weight_decay;
  if (exclude_bias_norm && (tensor.norm || !tensor_options(tensor, {NoDecayCategory::bias}).weight_decay)) {
    f.adapted = false;
    f.decayed = false;
  }
  return f;
}

TensorNorms::TensorNorms(Backend& backend, std::vector<ParameterTensor> tensors, bool exclude_bias_norm,
                         const std::vector<NoDecayCategory>& no_decay)
    : backend_(backend) {
  UpdateRanges check(tensors, no_decay);  // the tiling's errors, named as the other optimizers name them
  (void)check;
  std::stable_sort(tensors.begin(), tensors.end(),
                   [](const ParameterTensor& a, const ParameterTensor& b) { return a.offset < b.offset; });
  if (tensors.empty()) return;
  offsets_.push_back(0);
  for (const ParameterTensor& t : tensors) {
    if (t.count == 0) continue;
    offsets_.push_back(t.offset + t.count);
    flags_.push_back(trust_flags(t, exclude_bias_norm, no_decay));
  }
}

void TensorNorms::prepare(int64_t numel) {
  if (offsets_.empty()) {
    offsets_ = {0, numel};
    flags_ = {TrustFlags{}};
  }
  ST_CHECK(offsets_.back() == numel, "the optimizer's parameter tensors cover ", offsets_.back(),
           " elements, but the buffer has ", numel);
  if (squares_.numel() > 0) return;
  const auto n = static_cast<int64_t>(flags_.size());
  host_ends_ = Tensor({n}, DType::i64, "optimizer tensor ends (host)");
  host_flags_ = Tensor({n}, DType::i32, "optimizer tensor flags (host)");
  for (int64_t t = 0; t < n; ++t) {
    host_ends_.data<int64_t>()[t] = offsets_[static_cast<size_t>(t) + 1];
    const TrustFlags& f = flags_[static_cast<size_t>(t)];
    host_flags_.data<int32_t>()[t] =
        (f.adapted ? kernels::TensorTable::kAdapted : 0) | (f.decayed ? kernels::TensorTable::kDecayed : 0);
  }
  plan_ = kernels::plan_segment_sums(offsets_, 2, backend_.multiprocessor_count());
  const std::vector<int64_t> tables = kernels::segment_tables(plan_, offsets_);
  host_tables_ = Tensor({static_cast<int64_t>(tables.size())}, DType::i64, "optimizer segment tables (host)");
  std::copy(tables.begin(), tables.end(), host_tables_.data<int64_t>());
  ends_ = backend_.empty({n}, DType::i64, "optimizer tensor ends");
  flag_bits_ = backend_.empty({n}, DType::i32, "optimizer tensor flags");
  segment_tables_ = backend_.empty({host_tables_.numel()}, DType::i64, "optimizer segment tables");
  partial_ = backend_.empty({std::max<int64_t>(1, plan_.partial_size())}, DType::f64, "optimizer norm partial sums");
  squares_ = backend_.zeros({2 * n}, DType::f64, "optimizer squared norms");
  Stream& s = backend_.compute_stream();
  backend_.copy_async(s, ends_, host_ends_);
  backend_.copy_async(s, flag_bits_, host_flags_);
  backend_.copy_async(s, segment_tables_, host_tables_);
}

kernels::TensorTable TensorNorms::table() const {
  return kernels::TensorTable{ends_.device_data<int64_t>(), flag_bits_.device_data<int32_t>(),
                              static_cast<int64_t>(flags_.size())};
}

}  // namespace scaletrain::optim
