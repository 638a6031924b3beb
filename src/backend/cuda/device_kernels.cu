// The kernels/ functors as CUDA kernels: kernels::launch_cuda (declared in kernels/launch_cuda.hpp)
// launches the grid-stride kernel of kernels/launch_device.cuh on a stream, launch_cuda_column_sums
// the reduction primitive's kernels (kernels/reduction_device.cuh); both are instantiated here
// for every functor scaletrain launches, in every storage type (f32, bf16, f16), for the configured
// architectures (sm_80, sm_90). backend/launch.hpp calls it for a stream with a CUDA handle.
#include <string>

#include "scaletrain/core/error.hpp"
#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/adaptive_pool.hpp"
#include "scaletrain/kernels/attention.hpp"
#include "scaletrain/kernels/batch_norm.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/conv_layout.hpp"
#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/evaluation_record.hpp"
#include "scaletrain/kernels/launch_cuda.hpp"
#include "scaletrain/kernels/launch_device.cuh"
#include "scaletrain/kernels/layer_norm.hpp"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/pool_direct.hpp"
#include "scaletrain/kernels/reduction_device.cuh"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"
#include "scaletrain/kernels/subsample_pad.hpp"
#include "scaletrain/kernels/tokens.hpp"
#include "scaletrain/kernels/trust_ratio_update.hpp"

namespace scaletrain::kernels {

template <class F>
void launch_cuda(void* stream, const char* label, int64_t n, const F& f) {
  const cudaError_t rc = launch_device(n, f, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess)
    throw_error(__FILE__, __LINE__, "CUDA",
                std::string("launch of kernel '") + label + "' over " + std::to_string(n) +
                    " elements failed: " + cudaGetErrorString(rc));
}

template <class F>
void launch_cuda_rows(void* stream, const char* label, int64_t rows, int64_t packs, const F& f) {
  const cudaError_t rc = launch_device_rows(rows, packs, f, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess)
    throw_error(__FILE__, __LINE__, "CUDA",
                std::string("launch of kernel '") + label + "' over " + std::to_string(rows) + " rows of " +
                    std::to_string(packs) + " packs failed: " + cudaGetErrorString(rc));
}

template <class Source, class Sink>
void launch_cuda_segment_sums(void* stream, const char* label, const SegmentSumsPlan& plan, const SegmentTables& tables,
                              const Source& src, double* partial, const Sink& sink) {
  const cudaError_t rc =
      launch_device_segment_sums(plan, tables, src, partial, sink, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess)
    throw_error(__FILE__, __LINE__, "CUDA",
                std::string("launch of segment sums '") + label + "' over " + std::to_string(plan.segments) +
                    " segments failed: " + cudaGetErrorString(rc));
}

template <class F>
void launch_cuda_row_reductions(void* stream, const char* label, const RowsPlan& plan, const F& f) {
  const cudaError_t rc = launch_device_row_reductions(plan, f, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess)
    throw_error(__FILE__, __LINE__, "CUDA",
                std::string("launch of row reduction '") + label + "' over " + std::to_string(plan.rows) +
                    " rows failed: " + cudaGetErrorString(rc));
}

template <class Source, class Sink>
void launch_cuda_column_sums(void* stream, const char* label, const ColumnSumsPlan& plan, const Source& src,
                             double* partial, const Sink& sink) {
  const cudaError_t rc = launch_device_column_sums(plan, src, partial, sink, static_cast<cudaStream_t>(stream));
  if (rc != cudaSuccess)
    throw_error(__FILE__, __LINE__, "CUDA",
                std::string("launch of reduction '") + label + "' over [" + std::to_string(plan.rows) + ", " +
                    std::to_string(plan.cols) + "] failed: " + cudaGetErrorString(rc));
}

#define ST_INSTANTIATE(...) template void launch_cuda<__VA_ARGS__>(void*, const char*, int64_t, const __VA_ARGS__&);
#define ST_INSTANTIATE_STORAGE(F) ST_INSTANTIATE(F<float>) ST_INSTANTIATE(F<bf16>) ST_INSTANTIATE(F<f16>)
// The contiguous element-wise functors, per element and in packs (backend/launch.hpp's launch_elements).
#define ST_INSTANTIATE_ELEMENTS(...) ST_INSTANTIATE(__VA_ARGS__) ST_INSTANTIATE(ElementPacks<__VA_ARGS__, kChannelPack>)
#define ST_INSTANTIATE_ELEMENTS_STORAGE(F) \
  ST_INSTANTIATE_ELEMENTS(F<float>) ST_INSTANTIATE_ELEMENTS(F<bf16>) ST_INSTANTIATE_ELEMENTS(F<f16>)
ST_INSTANTIATE_ELEMENTS_STORAGE(ReluForward)
ST_INSTANTIATE_ELEMENTS_STORAGE(SeluForward)
ST_INSTANTIATE_ELEMENTS_STORAGE(Relu6Forward)
ST_INSTANTIATE_ELEMENTS_STORAGE(Relu6Backward)  // also Relu6BackwardFromOutput
ST_INSTANTIATE_ELEMENTS_STORAGE(ReluBackward)  // also ReluBackwardFromOutput: the same functor
ST_INSTANTIATE_ELEMENTS_STORAGE(SeluBackward)
ST_INSTANTIATE_ELEMENTS_STORAGE(SeluBackwardFromOutput)
ST_INSTANTIATE_ELEMENTS_STORAGE(GeluForward)
ST_INSTANTIATE_ELEMENTS_STORAGE(GeluBackward)
ST_INSTANTIATE_ELEMENTS_STORAGE(AddTensors)
ST_INSTANTIATE_ELEMENTS(Cast<float, float>)
ST_INSTANTIATE_ELEMENTS(Cast<float, bf16>)
ST_INSTANTIATE_ELEMENTS(Cast<float, f16>)
ST_INSTANTIATE_ELEMENTS(Cast<bf16, float>)
ST_INSTANTIATE_ELEMENTS(Cast<f16, float>)
ST_INSTANTIATE_ELEMENTS(SgdUpdate)
ST_INSTANTIATE_ELEMENTS(AdamWUpdate)
ST_INSTANTIATE_ELEMENTS(Scale)
ST_INSTANTIATE_ELEMENTS(DivideBy)
#undef ST_INSTANTIATE_ELEMENTS_STORAGE
#undef ST_INSTANTIATE_ELEMENTS
ST_INSTANTIATE_STORAGE(DropoutForward)
ST_INSTANTIATE_STORAGE(DropoutBackward)
ST_INSTANTIATE(BnMean)
ST_INSTANTIATE(BnTrainingScale)
ST_INSTANTIATE(BnCountBatch)
ST_INSTANTIATE(BnEvalScale)
ST_INSTANTIATE(BnIdentityScale)
ST_INSTANTIATE_STORAGE(BnFoldIntoFilters)
ST_INSTANTIATE(BnFoldIntoBias)
ST_INSTANTIATE_STORAGE(SubsamplePadForward)
ST_INSTANTIATE_STORAGE(SubsamplePadBackward)
// Input normalization from every stored sample type (uint8, f16, f32) to every compute type.
#define ST_INSTANTIATE_NORMALIZE(S) \
  ST_INSTANTIATE(Normalize<S, float>) ST_INSTANTIATE(Normalize<S, bf16>) ST_INSTANTIATE(Normalize<S, f16>) \
  ST_INSTANTIATE(NormalizeOneChannel<S, float>) ST_INSTANTIATE(NormalizeOneChannel<S, bf16>)         \
  ST_INSTANTIATE(NormalizeOneChannel<S, f16>)
ST_INSTANTIATE_NORMALIZE(uint8_t)
ST_INSTANTIATE_NORMALIZE(f16)
ST_INSTANTIATE_NORMALIZE(float)
#undef ST_INSTANTIATE_NORMALIZE
ST_INSTANTIATE(BiasAdd)
ST_INSTANTIATE(BiasGrad)
ST_INSTANTIATE_STORAGE(BiasAddStored)
ST_INSTANTIATE_STORAGE(PadNhwc)
ST_INSTANTIATE_STORAGE(CropNhwc)
ST_INSTANTIATE(FilterOihwToOhwi<float, float>)
ST_INSTANTIATE(FilterOihwToOhwi<bf16, bf16>)
ST_INSTANTIATE(FilterOihwToOhwi<f16, f16>)
ST_INSTANTIATE_STORAGE(MasterFiltersToOhwi)
ST_INSTANTIATE(FilterOhwiToOihw<float, float>)
ST_INSTANTIATE(FilterOhwiToOihw<bf16, float>)
ST_INSTANTIATE(FilterOhwiToOihw<f16, float>)
ST_INSTANTIATE_STORAGE(PoolForwardDirect)
ST_INSTANTIATE_STORAGE(PoolBackwardDirect)
ST_INSTANTIATE_STORAGE(AdaptivePoolForward)
ST_INSTANTIATE_STORAGE(AdaptivePoolBackward)
ST_INSTANTIATE(SoftmaxCrossEntropyBackward)
// The device's step state (kernels/step_state.hpp).
ST_INSTANTIATE(DecideStep)
ST_INSTANTIATE(SetValue<double>)
ST_INSTANTIATE(SetValue<float>)
// Every parameter range's update in one launch, with the compute-type copy or none.
ST_INSTANTIATE(MultiTensorUpdate<SgdUpdate, float>)
ST_INSTANTIATE(MultiTensorUpdate<SgdUpdate, bf16>)
ST_INSTANTIATE(MultiTensorUpdate<SgdUpdate, f16>)
ST_INSTANTIATE(MultiTensorUpdate<AdamWUpdate, float>)
ST_INSTANTIATE(MultiTensorUpdate<AdamWUpdate, bf16>)
ST_INSTANTIATE(MultiTensorUpdate<AdamWUpdate, f16>)
// LARS and LAMB (kernels/trust_ratio_update.hpp).
ST_INSTANTIATE(LarsUpdate<float>)
ST_INSTANTIATE(LarsUpdate<bf16>)
ST_INSTANTIATE(LarsUpdate<f16>)
ST_INSTANTIATE(LambMoments)
ST_INSTANTIATE(LambUpdate<float>)
ST_INSTANTIATE(LambUpdate<bf16>)
ST_INSTANTIATE(LambUpdate<f16>)
// Attention's head-order copies and the token layers.
ST_INSTANTIATE_STORAGE(TokensToHeads)
ST_INSTANTIATE_STORAGE(HeadsToTokens)
ST_INSTANTIATE_STORAGE(PrependToken)
ST_INSTANTIATE_STORAGE(DropFirstToken)
ST_INSTANTIATE_STORAGE(AddPositions)
ST_INSTANTIATE_STORAGE(SelectToken)
ST_INSTANTIATE_STORAGE(SelectTokenBackward)
ST_INSTANTIATE(AugmentCropFlip<uint8_t>)
ST_INSTANTIATE(AugmentCropFlip<f16>)
ST_INSTANTIATE(AugmentCropFlip<float>)
// The element passes over rows x packs of channels: every storage type, packs of 1 and kChannelPack.
#define ST_INSTANTIATE_ROWS(...) \
  template void launch_cuda_rows<__VA_ARGS__>(void*, const char*, int64_t, int64_t, const __VA_ARGS__&);
#define ST_INSTANTIATE_ROWS_PACKS(F)                                                                   \
  ST_INSTANTIATE_ROWS(F<float, 1>) ST_INSTANTIATE_ROWS(F<bf16, 1>) ST_INSTANTIATE_ROWS(F<f16, 1>)      \
  ST_INSTANTIATE_ROWS(F<float, kChannelPack>) ST_INSTANTIATE_ROWS(F<bf16, kChannelPack>)               \
  ST_INSTANTIATE_ROWS(F<f16, kChannelPack>)
ST_INSTANTIATE_ROWS_PACKS(BnApply)
ST_INSTANTIATE_ROWS_PACKS(BnApplyAddRelu)
ST_INSTANTIATE_ROWS_PACKS(BnBackwardData)
ST_INSTANTIATE_ROWS_PACKS(BnBackwardDataResidual)
ST_INSTANTIATE_ROWS_PACKS(CopyChannels)
#undef ST_INSTANTIATE_ROWS_PACKS
#undef ST_INSTANTIATE_ROWS
// The per-row reductions.
template void launch_cuda_row_reductions<SoftmaxCrossEntropyForward>(void*, const char*, const RowsPlan&,
                                                                     const SoftmaxCrossEntropyForward&);
template void launch_cuda_row_reductions<EvaluationRecord>(void*, const char*, const RowsPlan&, const EvaluationRecord&);
#define ST_INSTANTIATE_ROW_REDUCTIONS(...) \
  template void launch_cuda_row_reductions<__VA_ARGS__>(void*, const char*, const RowsPlan&, const __VA_ARGS__&);
#define ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE(F) \
  ST_INSTANTIATE_ROW_REDUCTIONS(F<float>) ST_INSTANTIATE_ROW_REDUCTIONS(F<bf16>) ST_INSTANTIATE_ROW_REDUCTIONS(F<f16>)
ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE(LayerNormForward)
ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE(LayerNormBackwardData)
ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE(SoftmaxRowsForward)
ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE(SoftmaxRowsBackward)
#undef ST_INSTANTIATE_ROW_REDUCTIONS_STORAGE
#undef ST_INSTANTIATE_ROW_REDUCTIONS
// The reduction primitive's (source, sink) pairs.
#define ST_INSTANTIATE_SUMS(S, K) \
  template void launch_cuda_column_sums<S, K>(void*, const char*, const ColumnSumsPlan&, const S&, double*, const K&);
#define ST_INSTANTIATE_SUMS_STORAGE(S, K) \
  ST_INSTANTIATE_SUMS(S<float>, K) ST_INSTANTIATE_SUMS(S<bf16>, K) ST_INSTANTIATE_SUMS(S<f16>, K)
ST_INSTANTIATE_SUMS_STORAGE(ColumnValues, BnSumsAndCount)
ST_INSTANTIATE_SUMS_STORAGE(ColumnValues, StoreFloat)
ST_INSTANTIATE_SUMS_STORAGE(ColumnValues, StoreDouble)
ST_INSTANTIATE_SUMS_STORAGE(ColumnValues, BnSumsToMean)
ST_INSTANTIATE_SUMS_STORAGE(BnSquaredDeviations, BnSquaredDeviationSums)
ST_INSTANTIATE_SUMS_STORAGE(BnSquaredDeviations, BnDeviationsToScale)
ST_INSTANTIATE_SUMS_STORAGE(BnGradientTerms, BnGradientSums)
ST_INSTANTIATE_SUMS(LossTerms, AddDouble)
ST_INSTANTIATE_SUMS(LossTerms, AddDoubleUnless)
ST_INSTANTIATE_SUMS_STORAGE(LayerNormGradientTerms, StoreTwoVectors)
// The per-segment sums: the non-finite count, values and squared values (per-tensor norms) of every
// storage type.
#define ST_INSTANTIATE_SEGMENTS(S)                                                                   \
  template void launch_cuda_segment_sums<S, StoreDouble>(void*, const char*, const SegmentSumsPlan&, \
                                                         const SegmentTables&, const S&, double*, const StoreDouble&);
template void launch_cuda_segment_sums<NonFiniteFlags, StoreVerdict>(void*, const char*, const SegmentSumsPlan&,
                                                                    const SegmentTables&, const NonFiniteFlags&,
                                                                    double*, const StoreVerdict&);
ST_INSTANTIATE_SEGMENTS(Values<float>)
ST_INSTANTIATE_SEGMENTS(Values<bf16>)
ST_INSTANTIATE_SEGMENTS(Values<f16>)
ST_INSTANTIATE_SEGMENTS(SquaredValues<float>)
ST_INSTANTIATE_SEGMENTS(SquaredValues<bf16>)
ST_INSTANTIATE_SEGMENTS(SquaredValues<f16>)
ST_INSTANTIATE_SEGMENTS(LarsSquares)
ST_INSTANTIATE_SEGMENTS(LambSquares)
#undef ST_INSTANTIATE_SEGMENTS
#undef ST_INSTANTIATE_SUMS_STORAGE
#undef ST_INSTANTIATE_SUMS
#undef ST_INSTANTIATE_STORAGE
#undef ST_INSTANTIATE

}  // namespace scaletrain::kernels
