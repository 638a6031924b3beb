// The oneDNN engine and stream of the CPU backend, and the helpers its ops share: a user-mode
// scratchpad sized once per op, and weight reorders between PyTorch's layout and the layout a
// primitive chose (skipped when they coincide).
#pragma once
#include <cstddef>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

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
  void to_internal(dnnl::stream& s, const float* user);
  // Binds the user's buffer, for an output written through internal() and copied by to_user().
  void bind_user(float* user) { user_.set_data_handle(user); }
  // internal -> the bound user buffer (after a primitive wrote internal()).
  void to_user(dnnl::stream& s);

 private:
  bool needed_ = false;
  dnnl::memory user_, internal_;
  Tensor storage_;
  PrimitiveCall to_internal_, to_user_;
};

}  // namespace scaletrain::cpu
