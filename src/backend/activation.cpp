// The activation kernels launched on a stream, dispatched on the storage type.
#include "scaletrain/backend/activation.hpp"

#include "scaletrain/backend/launch.hpp"
#include "scaletrain/core/dispatch.hpp"
#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/activation.hpp"

namespace scaletrain {

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::none: return "none";
    case Activation::relu: return "relu";
    case Activation::selu: return "selu";
  }
  return "?";
}

void launch_activation_forward(Stream& stream, Activation act, DType dtype, const void* pre, void* post, int64_t n) {
  ST_CHECK(act != Activation::none, "launch_activation_forward: the activation 'none' has no kernel");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(pre);
    T* y = static_cast<T*>(post);
    if (act == Activation::relu)
      launch(stream, "relu_forward", n, kernels::ReluForward<T>{x, y});
    else
      launch(stream, "selu_forward", n, kernels::SeluForward<T>{x, y});
  });
}

void launch_activation_backward(Stream& stream, Activation act, DType dtype, const void* pre, const void* dpost,
                                void* dpre, int64_t n) {
  ST_CHECK(act != Activation::none, "launch_activation_backward: the activation 'none' has no kernel");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    const T* x = static_cast<const T*>(pre);
    const T* dy = static_cast<const T*>(dpost);
    T* dx = static_cast<T*>(dpre);
    if (act == Activation::relu)
      launch(stream, "relu_backward", n, kernels::ReluBackward<T>{x, dy, dx});
    else
      launch(stream, "selu_backward", n, kernels::SeluBackward<T>{x, dy, dx});
  });
}

void launch_activation_backward_from_output(Stream& stream, Activation act, DType dtype, const void* post,
                                            const void* dpost, void* dpre, int64_t n) {
  ST_CHECK(act != Activation::none, "launch_activation_backward_from_output: the activation 'none' has no kernel");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    const T* y = static_cast<const T*>(post);
    const T* dy = static_cast<const T*>(dpost);
    T* dx = static_cast<T*>(dpre);
    if (act == Activation::relu)
      launch(stream, "relu_backward_from_output", n, kernels::ReluBackwardFromOutput<T>{y, dy, dx});
    else
      launch(stream, "selu_backward_from_output", n, kernels::SeluBackwardFromOutput<T>{y, dy, dx});
  });
}

}  // namespace scaletrain
