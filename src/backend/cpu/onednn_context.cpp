// Helpers shared by the oneDNN ops: unbound memories, op-owned host storage, PrimitiveCall
// (execution with prebound arguments) and LayoutBridge (cached weight-layout reorders).
#include "scaletrain/backend/cpu/onednn_context.hpp"

#include <oneapi/dnnl/dnnl_debug.h>

#include "scaletrain/core/check_dnnl.hpp"

namespace scaletrain::cpu {

dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& eng) {
  dnnl::memory m;
  ST_DNNL_CHECK(m = dnnl::memory(md, eng, DNNL_MEMORY_NONE));
  return m;
}

Tensor host_bytes(size_t bytes) {
  // At least one element so that a zero-sized scratchpad still has a valid pointer.
  return Tensor({static_cast<int64_t>(bytes + 3) / 4 + 1}, DType::f32, Device::cpu);
}

PrimitiveCall::PrimitiveCall(dnnl::primitive primitive, const std::unordered_map<int, dnnl::memory>& args)
    : primitive_(std::move(primitive)) {
  memories_.reserve(args.size());
  args_.reserve(args.size());
  for (const auto& [arg, mem] : args) {
    memories_.push_back(mem);
    args_.push_back({arg, mem.get()});
  }
}

void PrimitiveCall::run(dnnl::stream& s) const {
  const dnnl_status_t status =
      dnnl_primitive_execute(primitive_.get(), s.get(), static_cast<int>(args_.size()), args_.data());
  if (status != dnnl_success) {
    throw_error(__FILE__, __LINE__, "oneDNN",
                detail::concat("executing ", dnnl_prim_kind2str(dnnl::convert_to_c(primitive_.get_kind())),
                               " failed: status ", static_cast<int>(status)));
  }
}

LayoutBridge::LayoutBridge(const dnnl::memory::desc& user, const dnnl::memory::desc& internal,
                           const dnnl::engine& eng) {
  needed_ = user != internal;
  user_ = unbound_memory(user, eng);
  if (!needed_) return;
  storage_ = host_bytes(internal.get_size());
  ST_DNNL_CHECK(internal_ = dnnl::memory(internal, eng, storage_.raw()));
  to_internal_ = PrimitiveCall(dnnl::reorder(user_, internal_), {{DNNL_ARG_FROM, user_}, {DNNL_ARG_TO, internal_}});
  to_user_ = PrimitiveCall(dnnl::reorder(internal_, user_), {{DNNL_ARG_FROM, internal_}, {DNNL_ARG_TO, user_}});
}

void LayoutBridge::to_internal(dnnl::stream& s, const float* user) {
  user_.set_data_handle(const_cast<float*>(user));
  if (!needed_) return;
  to_internal_.run(s);
}

void LayoutBridge::to_user(dnnl::stream& s) {
  if (!needed_) return;
  to_user_.run(s);
}

}  // namespace scaletrain::cpu
