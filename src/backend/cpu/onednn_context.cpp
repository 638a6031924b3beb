// Helpers shared by the oneDNN ops: unbound memories, op-owned host storage, and LayoutBridge
// (cached reorders between user weight layouts and primitive-chosen layouts).
#include "scaletrain/backend/cpu/onednn_context.hpp"

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

LayoutBridge::LayoutBridge(const dnnl::memory::desc& user, const dnnl::memory::desc& internal,
                           const dnnl::engine& eng) {
  needed_ = user != internal;
  user_ = unbound_memory(user, eng);
  if (!needed_) return;
  storage_ = host_bytes(internal.get_size());
  ST_DNNL_CHECK(internal_ = dnnl::memory(internal, eng, storage_.raw()));
  ST_DNNL_CHECK(to_internal_ = dnnl::reorder(user_, internal_));
  ST_DNNL_CHECK(to_user_ = dnnl::reorder(internal_, user_));
}

void LayoutBridge::to_internal(dnnl::stream& s, const float* user) {
  user_.set_data_handle(const_cast<float*>(user));
  if (!needed_) return;
  ST_DNNL_CHECK(to_internal_.execute(s, user_, internal_));
}

void LayoutBridge::to_user(dnnl::stream& s) {
  if (!needed_) return;
  ST_DNNL_CHECK(to_user_.execute(s, internal_, user_));
}

}  // namespace scaletrain::cpu
