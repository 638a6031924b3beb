// Device-compile check of every kernels/ functor: each one is launched from a CUDA kernel in a
// grid-stride loop through kernels/launch_device.cuh, as the CUDA backend launches them, and every
// reduction source through kernels/reduction_device.cuh. Built by nvcc for sm_80 and sm_90
// in CI (tests/cuda_compile.cmake); it needs no GPU because it is only compiled, never run here.
#include <cstdint>

#include "scaletrain/kernels/activation.hpp"
#include "scaletrain/kernels/batch_norm.hpp"
#include "scaletrain/kernels/bias.hpp"
#include "scaletrain/kernels/cast.hpp"
#include "scaletrain/kernels/conv_layout.hpp"
#include "scaletrain/kernels/dropout.hpp"
#include "scaletrain/kernels/launch_device.cuh"
#include "scaletrain/kernels/merge.hpp"
#include "scaletrain/kernels/normalize.hpp"
#include "scaletrain/kernels/optimizer_update.hpp"
#include "scaletrain/kernels/pool_direct.hpp"
#include "scaletrain/kernels/reduction_device.cuh"
#include "scaletrain/kernels/scale.hpp"
#include "scaletrain/kernels/softmax_cross_entropy.hpp"

namespace {

template <class F>
void launch(int64_t n, const F& f) {
  (void)scaletrain::kernels::launch_device(n, f);
}

}  // namespace

using namespace scaletrain;
using namespace scaletrain::kernels;

// Instantiates a kernel per functor; the pointers are never dereferenced on the host.
void scaletrain_compile_every_functor(float* a, float* b, float* c, float* d, uint8_t* u, int32_t* l, bf16* h,
                                      f16* g, int64_t* idx, double* sums) {
  launch(1, ReluForward<float>{a, b});
  launch(1, ReluBackward<float>{a, b, c});
  launch(1, SeluForward<float>{a, b});
  launch(1, SeluBackward<float>{a, b, c});
  launch(1, ReluForward<bf16>{h, h});
  launch(1, SeluBackward<f16>{g, g, g});
  launch(1, BiasAdd{a, b, 4});
  launch(1, BiasGrad{a, b, 2, 4});
  launch(1, DropoutForward<float>{a, b, u, 0.5f, 1, sums, idx, 4});
  launch(1, DropoutBackward<float>{a, u, b, 2.0f});
  launch(1, DropoutForward<bf16>{h, h, u, 0.5f, 1, sums, idx, 4});
  (void)launch_device_row_reductions(RowsPlan{4, 10, 16, 16}, SoftmaxCrossEntropyForward{a, l, b, c, l, 10}, nullptr);
  launch(1, SoftmaxCrossEntropyBackward{a, l, b, 10, 0.5f});
  launch(1, SgdUpdate{a, b, c, 0.1f, 0.9f, 0.0f, 0.0f, true, false});
  launch(1, AdamWUpdate{a, b, c, d, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.001f});
  launch(1, MultiTensorUpdate<SgdUpdate, bf16>{SgdUpdate{a, b, c, 0.1f, 0.9f, 0.0f, 0.0f, true, false}, nullptr,
                                               UpdateRangeTable{idx, nullptr, 1}, 0.1f, true, h});
  launch(1, DecideStep{nullptr, nullptr, VerdictLayout{1}, StepRules{}});
  launch(1, Cast<float, bf16>{a, h, 1.0f});
  launch(1, Cast<bf16, float>{h, a, 1.0f});
  launch(1, Cast<float, f16>{a, g, 2.0f});
  launch(1, Cast<f16, float>{g, a, 1.0f});
  launch(1, Scale{a, 0.5f});
  launch(1, Normalize<uint8_t, float>{u, a, b, c, 3});
  launch(1, Normalize<uint8_t, f16>{u, g, b, c, 3});
  launch(1, Normalize<float, bf16>{a, h, b, c, 3});
  launch(1, NormalizeOneChannel<f16, float>{g, a, 0.5f, 2.0f});
  launch(1, AugmentCropFlip<uint8_t>{u, u, 28, 28, 1, 2, true, 1, sums, idx});
  launch(1, AugmentCropFlip<float>{a, b, 28, 28, 1, 2, true, 1, sums, idx});
  launch(1, DivideBy{a, 3.0f});
  launch(1, ElementPacks<ReluForward<bf16>, kChannelPack>{{h, h}});
  launch(1, ElementPacks<SeluBackwardFromOutput<f16>, kChannelPack>{{g, g, g}});
  launch(1, ElementPacks<AddTensors<bf16>, kChannelPack>{{h, h, h}});
  launch(1, ElementPacks<Cast<float, bf16>, kChannelPack>{{a, h, 2.0f}});
  launch(1, ElementPacks<SgdUpdate, kChannelPack>{{a, b, c, 0.1f, 0.9f, 0.0f, 0.0f, true, false}});
  launch(1, ElementPacks<AdamWUpdate, kChannelPack>{{a, b, c, d, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 0.1f, 0.001f}});
  launch(1, ElementPacks<DivideBy, kChannelPack>{{a, 3.0f}});
  (void)launch_device_rows(1, 1, BnApply<bf16, kChannelPack>{h, h, a, b, 8, true});
  (void)launch_device_rows(1, 1, BnApplyAddRelu<f16, 1>{g, g, g, a, b, 3});
  (void)launch_device_rows(1, 1, BnBackwardData<float, kChannelPack>{a, b, c, d, a, b, c, sums, d, 8, true});
  (void)launch_device_rows(1, 1, BnBackwardDataResidual<bf16, kChannelPack>{h, h, h, h, h, a, b, c, sums, d, 8});
  const ColumnSumsPlan plan = {};
  (void)launch_device_column_sums(plan, LossTerms{a, l}, sums, AddDouble{sums}, nullptr);
  (void)launch_device_column_sums(plan, ColumnValues<bf16>{h, 4}, sums, StoreFloat{a}, nullptr);
  (void)launch_device_column_sums(plan, BnSquaredDeviations<f16>{g, a, 4}, sums, BnSquaredDeviationSums{sums}, nullptr);
  (void)launch_device_column_sums(plan, BnGradientTerms<bf16>{h, h, h, a, b, 4, true}, sums,
                                  BnGradientSums{sums, a, b, 4}, nullptr);
  (void)launch_device_segment_sums(SegmentSumsPlan{}, SegmentTables{idx, idx}, SquaredValues<bf16>{h}, sums,
                                   StoreDouble{sums}, nullptr);
  (void)launch_device_segment_sums(SegmentSumsPlan{}, SegmentTables{idx, idx}, NonFiniteFlags{a, 8, 1, b}, sums,
                                   StoreDouble{sums}, nullptr);
  const NhwcPadGeometry pad{2, 2, 3, 3, 3, 0, 0};
  launch(1, PadNhwc<bf16>{h, h, pad, 0.0f});
  launch(1, CropNhwc<f16>{g, g, pad});
  const FilterGeometry filter{4, 3, 3, 3};
  launch(1, FilterOihwToOhwi<bf16, bf16>{h, h, filter});
  launch(1, FilterOhwiToOihw<f16, float>{g, a, filter});
  launch(1, MasterFiltersToOhwi<bf16>{a, h, idx, idx, 1});
  const PoolGeometry pool{4, 4, 3, 2, 2, 2, 2, 2, 2, 0, 0};
  launch(1, PoolForwardDirect<bf16>{h, h, pool, true});
  launch(1, PoolBackwardDirect<float>{a, b, c, pool, false});
}
