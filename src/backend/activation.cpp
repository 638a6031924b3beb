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
    case Activation::relu6:
      return "relu6";
    case Activation::selu: return "selu";
    case Activation::gelu: return "gelu";
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
      launch_elements(stream, "relu_forward", n, kernels::ReluForward<T>{x, y});
    else if (act == Activation::relu6)
      launch_elements(stream, "relu6_forward", n, kernels::Relu6Forward<T>{x, y});
    else if (act == Activation::gelu)
      launch_elements(stream, "gelu_forward", n, kernels::GeluForward<T>{x, y});
    else
      launch_elements(stream, "selu_forward", n, kernels::SeluForward<T>{x, y});
  });
}

namespace {

// dpre = act'(.) * dpost with the gradient functors Relu<T> and Selu<T>, which read `from` (the
// activation's input or its output, as the functors say) and dpost; ReLU6's one functor serves both.
// The labels are string literals: a queued launch keeps the pointer.
template <template <class> class Relu, template <class> class Selu>
void launch_gradient(Stream& stream, Activation act, DType dtype, const void* from, const void* dpost, void* dpre,
                     int64_t n, const char* relu_label, const char* selu_label) {
  ST_CHECK(act != Activation::none, "the activation 'none' has no gradient kernel");
  visit_float_type(dtype, [&](auto t) {
    using T = decltype(t);
    const T* a = static_cast<const T*>(from);
    const T* dy = static_cast<const T*>(dpost);
    T* dx = static_cast<T*>(dpre);
    if (act == Activation::relu)
      launch_elements(stream, relu_label, n, Relu<T>{a, dy, dx});
    else if (act == Activation::relu6)
      launch_elements(stream, "relu6_backward", n, kernels::Relu6Backward<T>{a, dy, dx});
    else if (act == Activation::gelu)
      launch_elements(stream, "gelu_backward", n, kernels::GeluBackward<T>{a, dy, dx});
    else
      launch_elements(stream, selu_label, n, Selu<T>{a, dy, dx});
  });
}

}  // namespace

void launch_activation_backward(Stream& stream, Activation act, DType dtype, const void* pre, const void* dpost,
                                void* dpre, int64_t n) {
  launch_gradient<kernels::ReluBackward, kernels::SeluBackward>(stream, act, dtype, pre, dpost, dpre, n,
                                                                "relu_backward", "selu_backward");
}

void launch_activation_backward_from_output(Stream& stream, Activation act, DType dtype, const void* post,
                                            const void* dpost, void* dpre, int64_t n) {
  ST_CHECK(act != Activation::gelu, "GELU's gradient needs its input: it has no form from its output");
  launch_gradient<kernels::ReluBackwardFromOutput, kernels::SeluBackwardFromOutput>(
      stream, act, dtype, post, dpost, dpre, n, "relu_backward_from_output", "selu_backward_from_output");
}

}  // namespace scaletrain
