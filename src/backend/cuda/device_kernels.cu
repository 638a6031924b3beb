// The kernels/ functors instantiated as CUDA kernels (grid-stride launches), compiled for the
// configured architectures (sm_80, sm_90). The CUDA backend's layers call these; with no GPU here
// this is compiled and linked, not run.
#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/launch_device.cuh"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

namespace scaletrain::kernels {

#define ST_INSTANTIATE(F) template cudaError_t launch_device<F>(int64_t, const F&, cudaStream_t);
#define ST_CAST(A, B) Cast<A, B>
ST_INSTANTIATE(ReluForward<float>)
ST_INSTANTIATE(ReluForward<bf16>)
ST_INSTANTIATE(ReluForward<f16>)
ST_INSTANTIATE(ReluBackward<float>)
ST_INSTANTIATE(ReluBackward<bf16>)
ST_INSTANTIATE(ReluBackward<f16>)
ST_INSTANTIATE(SeluForward<float>)
ST_INSTANTIATE(SeluForward<bf16>)
ST_INSTANTIATE(SeluForward<f16>)
ST_INSTANTIATE(SeluBackward<float>)
ST_INSTANTIATE(SeluBackward<bf16>)
ST_INSTANTIATE(SeluBackward<f16>)
ST_INSTANTIATE(BiasAdd)
ST_INSTANTIATE(BiasGrad)
ST_INSTANTIATE(DropoutForward<float>)
ST_INSTANTIATE(DropoutForward<bf16>)
ST_INSTANTIATE(DropoutForward<f16>)
ST_INSTANTIATE(DropoutBackward<float>)
ST_INSTANTIATE(DropoutBackward<bf16>)
ST_INSTANTIATE(DropoutBackward<f16>)
ST_INSTANTIATE(SoftmaxCrossEntropyForward)
ST_INSTANTIATE(SoftmaxCrossEntropyBackward)
ST_INSTANTIATE(SgdUpdate)
ST_INSTANTIATE(AdamWUpdate)
ST_INSTANTIATE(ST_CAST(float, bf16))
ST_INSTANTIATE(ST_CAST(bf16, float))
ST_INSTANTIATE(ST_CAST(float, f16))
ST_INSTANTIATE(ST_CAST(f16, float))
ST_INSTANTIATE(Scale)
ST_INSTANTIATE(DivideBy)
ST_INSTANTIATE(AccumulateLossSums)
ST_INSTANTIATE(CountNonFinite)
ST_INSTANTIATE(NormalizeU8<float>)
ST_INSTANTIATE(NormalizeU8<bf16>)
ST_INSTANTIATE(NormalizeU8<f16>)
ST_INSTANTIATE(AugmentCropFlipU8)
#undef ST_CAST
#undef ST_INSTANTIATE

}  // namespace scaletrain::kernels
