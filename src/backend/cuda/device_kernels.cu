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
ST_INSTANTIATE(ReluForward)
ST_INSTANTIATE(ReluBackward)
ST_INSTANTIATE(SeluForward)
ST_INSTANTIATE(SeluBackward)
ST_INSTANTIATE(BiasAdd)
ST_INSTANTIATE(BiasGrad)
ST_INSTANTIATE(DropoutForward)
ST_INSTANTIATE(DropoutBackward)
ST_INSTANTIATE(SoftmaxCrossEntropyForward)
ST_INSTANTIATE(SoftmaxCrossEntropyBackward)
ST_INSTANTIATE(SgdUpdate)
ST_INSTANTIATE(AdamWUpdate)
ST_INSTANTIATE(CastF32ToBf16)
ST_INSTANTIATE(CastBf16ToF32)
ST_INSTANTIATE(CastF32ToF16)
ST_INSTANTIATE(CastF16ToF32)
ST_INSTANTIATE(Scale)
ST_INSTANTIATE(DivideBy)
ST_INSTANTIATE(AccumulateLossSums)
ST_INSTANTIATE(CountNonFinite)
ST_INSTANTIATE(NormalizeU8)
ST_INSTANTIATE(AugmentCropFlipU8)
#undef ST_INSTANTIATE

}  // namespace scaletrain::kernels
