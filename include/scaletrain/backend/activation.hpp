// The activations a layer applies after its bias (Keras' `activation=` argument: none, relu, relu6, selu;
// gelu, exact, as torch.nn.GELU()),
// launched as kernels/ functors on a stream in the layer's storage type. Ops that fuse the
// activation into their output (SeparableConvOp) take the kind in their shape.
#pragma once
#include <cstdint>
#include <string>

#include "scaletrain/core/dtype.hpp"

namespace scaletrain {

class Stream;

enum class Activation { none, relu, relu6, selu, gelu };
std::string activation_name(Activation a);

// post[i] = act(pre[i]) for i < n, queued on `stream`; pre and post are `dtype` (f32, bf16, f16).
// Not for none (there is nothing to do: the output is pre itself).
void launch_activation_forward(Stream& stream, Activation act, DType dtype, const void* pre, void* post, int64_t n);
// dpre[i] = act'(pre[i]) * dpost[i] for i < n, queued on `stream`. Not for none.
void launch_activation_backward(Stream& stream, Activation act, DType dtype, const void* pre, const void* dpost,
                                void* dpre, int64_t n);
// The same gradient from the activation's output post instead of its input (kernels' *FromOutput
// functors), for ops that apply the activation to their own output: ReLU's is exact, SELU's needs no
// exp and differs by post's rounding (f32: at most 6e-8; bf16: at most 2^-9 of |post|). GELU has none
// (it is not monotonic): an error.
void launch_activation_backward_from_output(Stream& stream, Activation act, DType dtype, const void* post,
                                            const void* dpost, void* dpre, int64_t n);

}  // namespace scaletrain
