// The oneDNN engine and stream of the CPU backend, and the helpers its ops share: a user-mode
// scratchpad sized once per op, activations as post-ops, weight reorders between PyTorch's layout and the layout a
// primitive chose (skipped when they coincide), and the bound forward/backward primitive triple
// of a layer with weights.
#pragma once
#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "scaletrain/backend/activation.hpp"
#include "scaletrain/core/tensor.hpp"

namespace scaletrain::cpu {

// One engine and one in-order stream per backend; ops share it through a shared_ptr so an op may
// outlive the Backend object that made it.
struct OneDnnContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
using OneDnnContextPtr = std::shared_ptr<OneDnnContext>;

// A memory object whose storage the caller binds with set_data_handle() before each execution.
dnnl::memory unbound_memory(const dnnl::memory::desc& md, const dnnl::engine& eng);

// Host storage of `bytes` bytes (64-byte aligned) that lives as long as the op owning it.
Tensor host_bytes(size_t bytes);

// A layer's activation as the post-op of a oneDNN primitive (dst = scale * eltwise(dst): SELU as
// 1.0507 * elu with alpha 1.6733), applied to the f32 result before its rounding to the storage type;
// empty for none.
dnnl::post_ops activation_post_ops(Activation act);

// oneDNN's data type for a storage type (f32, bf16, f16); throws for others.
dnnl::memory::data_type onednn_type(DType t);

// A primitive with its arguments bound once: memories in the argument list keep their identity,
// so callers rebind storage with set_data_handle() and run() executes through oneDNN's C API
// without building an argument map (no allocation per call).
class PrimitiveCall {
 public:
  PrimitiveCall() = default;
  PrimitiveCall(dnnl::primitive primitive, const std::unordered_map<int, dnnl::memory>& args);
  void run(dnnl::stream& s) const;

 private:
  dnnl::primitive primitive_;
  std::vector<dnnl::memory> memories_;  // keeps the handles in args_ alive
  std::vector<dnnl_exec_arg_t> args_;
};

// Converts between the user's layout and a primitive's layout through a preallocated buffer; when
// both layouts are the same, no buffer is allocated and no reorder runs.
class LayoutBridge {
 public:
  LayoutBridge() = default;
  LayoutBridge(const dnnl::memory::desc& user, const dnnl::memory::desc& internal, const dnnl::engine& eng);
  bool needed() const { return needed_; }
  // The memory the primitive reads or writes: the internal buffer, or the user's memory when no
  // reorder is needed (then its handle follows the last bind_user()).
  const dnnl::memory& internal() const { return needed_ ? internal_ : user_; }
  // user -> internal (queued on the stream; a no-op besides binding when no reorder is needed).
  void to_internal(dnnl::stream& s, const void* user);
  // Binds the user's buffer, for an output written through internal() and copied by to_user().
  void bind_user(void* user) { user_.set_data_handle(user); }
  // internal -> the bound user buffer (after a primitive wrote internal()).
  void to_user(dnnl::stream& s);

 private:
  bool needed_ = false;
  dnnl::memory user_, internal_;
  Tensor storage_;
  PrimitiveCall to_internal_, to_user_;
};

// The forward, backward-data and backward-weights primitives of a layer with weights (convolution,
// inner product), arguments bound once: activations are rebound to the caller's buffers on every
// call, weights pass through LayoutBridges, and one scratchpad serves all three (they never run at
// the same time). Each call waits for the stream.
class WeightedPrimitives {
 public:
  WeightedPrimitives() = default;
  // src_md/dst_md: activations in the user's layout; w_user: weights in the user's layout and the
  // compute type, dw_user: the weight gradient in the user's layout (f32); b_md: f32, or a zero
  // memory::desc when there is no bias. The primitive descs were created with a user-mode
  // scratchpad.
  WeightedPrimitives(const dnnl::engine& eng, const dnnl::memory::desc& src_md, const dnnl::memory::desc& dst_md,
                     const dnnl::memory::desc& w_user, const dnnl::memory::desc& dw_user,
                     const dnnl::memory::desc& b_md, const dnnl::primitive_desc& fwd_pd,
                     const dnnl::primitive_desc& bwd_data_pd, const dnnl::primitive_desc& bwd_w_pd);
  void forward(dnnl::stream& s, const void* x, const void* w, const float* b, void* y);
  void backward_data(dnnl::stream& s, const void* dy, const void* w, void* dx);
  // db must be given exactly when the layer has a bias (checked by the caller, which names it).
  void backward_weights(dnnl::stream& s, const void* x, const void* dy, float* dw, float* db);

 private:
  bool bias_ = false;
  LayoutBridge w_fwd_, w_bwd_data_, dw_;
  // Activation memories rebound on every call; the prebound calls hold handles to these same
  // objects, so they are bound once.
  dnnl::memory src_, dst_, b_;
  Tensor scratch_storage_;
  PrimitiveCall fwd_call_, bwd_data_call_, bwd_w_call_;
};

}  // namespace scaletrain::cpu
