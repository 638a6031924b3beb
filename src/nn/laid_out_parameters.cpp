// LaidOutParameters: the filters' copies in their ops' layout (nn/laid_out_parameters.hpp).
#include "scaletrain/nn/laid_out_parameters.hpp"

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/conv_layout.hpp"

namespace scaletrain::nn {

void LaidOutParameters::build(Backend& backend, const std::vector<Filter>& filters, DType compute,
                              const std::string& model) {
  backend_ = &backend;
  count_ = static_cast<int64_t>(filters.size());
  if (filters.empty()) return;
  Tensor ends({count_}, DType::i64, model + ".laid_out.ends");
  Tensor table({count_ * kernels::kLaidOutFilterFields}, DType::i64, model + ".laid_out.table");
  int64_t total = 0;
  for (int64_t t = 0; t < count_; ++t) {
    const Filter& f = filters[static_cast<size_t>(t)];
    const Shape& s = f.parameter->shape;
    ST_CHECK(s.size() == 4 && f.parameter->op_layout == FilterLayout::ohwi, "parameter ", f.parameter->name, " ",
             shape_string(s), ": only a convolution's [O, I, KH, KW] filters are laid out as OHWI");
    const int64_t fields[kernels::kLaidOutFilterFields] = {f.source, s[0], s[1], s[2], s[3]};
    for (int64_t k = 0; k < kernels::kLaidOutFilterFields; ++k)
      table.data<int64_t>()[t * kernels::kLaidOutFilterFields + k] = fields[k];
    total += shape_numel(s);
    ends.data<int64_t>()[t] = total;
  }
  flat_ = backend.empty({total}, compute, model + ".parameters.laid_out");
  ends_ = backend.empty(ends.shape(), DType::i64, ends.name());
  table_ = backend.empty(table.shape(), DType::i64, table.name());
  backend.copy_async(backend.compute_stream(), ends_, ends);  // the queued copies keep the host tables
  backend.copy_async(backend.compute_stream(), table_, table);
  for (int64_t t = 0; t < count_; ++t) {
    Parameter& p = *filters[static_cast<size_t>(t)].parameter;
    const int64_t end = ends.data<int64_t>()[t];
    p.op_value = flat_.view(end - shape_numel(p.shape), {p.shape[0], p.shape[2], p.shape[3], p.shape[1]});
  }
}

void LaidOutParameters::refresh(const Tensor& flat_params) {
  if (empty()) return;
  visit_float_type(flat_.dtype(), [&](auto t) {
    using T = decltype(t);
    launch(backend_->compute_stream(), "filters_to_op_layout", flat_.numel(),
           kernels::MasterFiltersToOhwi<T>{flat_params.device_data<float>(), flat_.device_data<T>(),
                                           ends_.device_data<int64_t>(), table_.device_data<int64_t>(), count_});
  });
}

}  // namespace scaletrain::nn
