// What LARS and LAMB keep on the device to take per-tensor norms: the tensor table (each parameter
// tensor's end and flags: adapted by the trust ratio, decayed), the segment sums' plan, tables and
// partial sums over the same tensors, and the squared sums they write ([w^2 | g^2 or u^2] per
// tensor). Built once from the optimizer's tensors; one queue() is one pass over every tensor.
#pragma once
#include <cstdint>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/tensor.hpp"
#include "scaletrain/kernels/segment_sums.hpp"
#include "scaletrain/kernels/trust_ratio_update.hpp"
#include "scaletrain/optim/optimizer.hpp"

namespace scaletrain::optim {

// How one tensor is treated by a layer-wise adaptive optimizer.
struct TrustFlags {
  bool adapted = true;  // its update is scaled by the trust ratio
  bool decayed = true;  // weight decay applies
};
// exclude_bias_norm (MLPerf's ResNet-50 reference): a bias or a normalization parameter takes
// neither; optimizer.no_decay's categories take no weight decay.
TrustFlags trust_flags(const ParameterTensor& tensor, bool exclude_bias_norm, const std::vector<NoDecayCategory>& no_decay);

class TensorNorms {
 public:
  // `tensors` tile the flat buffer (checked as UpdateRanges does); none: one adapted, decayed tensor
  // over whatever buffer the first queue() gets.
  TensorNorms(Backend& backend, std::vector<ParameterTensor> tensors, bool exclude_bias_norm,
              const std::vector<NoDecayCategory>& no_decay);
  // The squared sums of `src` (kWidth 2) per tensor into squares(), queued on the compute stream.
  template <class Source>
  void queue(const char* label, int64_t numel, const Source& src) {
    prepare(numel);
    launch_segment_sums(backend_.compute_stream(), label, plan_,
                        kernels::SegmentTables::in(segment_tables_.device_data<int64_t>(), plan_.segments), src,
                        partial_.device_data<double>(), kernels::StoreDouble{squares_.device_data<double>()});
  }
  // The device's table and squared sums (after prepare).
  kernels::TensorTable table() const;
  const double* squares() const { return squares_.device_data<double>(); }
  // Makes the device tables for a buffer of `numel` elements (once; Error where the tensors cover another).
  void prepare(int64_t numel);

 private:
  Backend& backend_;
  std::vector<int64_t> offsets_;  // tensors + 1; empty until prepare() where no tensors were given
  std::vector<TrustFlags> flags_;
  kernels::SegmentSumsPlan plan_;
  Tensor ends_, flag_bits_, segment_tables_, partial_, squares_;
  Tensor host_ends_, host_flags_, host_tables_;  // the copies the tables are queued from
};

}  // namespace scaletrain::optim
