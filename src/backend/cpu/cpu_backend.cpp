// The CPU backend: one oneDNN engine and stream, OpenMP threads set to the cores this process is
// bound to (its affinity mask) unless a thread count is given, host memory as device memory,
// inline streams, and the op factories (oneDNN primitives, or sgemm, bf16 matmul, direct loops and
// the fused separable convolution where those are faster, unless onednn_only). bf16 runs on oneDNN's
// bf16 kernels where the CPU has AVX512-BF16, the GEMM-shaped ops as f32 GEMMs where the trainer's
// timing chose so (Bf16GemmTuning); f16, and bf16 elsewhere, run emulated (f32 ops on low-precision storage).
#include <omp.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/backend/cpu/bf16_gemm_shapes.hpp"
#include "scaletrain/backend/cpu/inline_stream.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"
#include "scaletrain/core/cpu_mask.hpp"

namespace scaletrain {
namespace {

std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic:
      return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    case dnnl::cpu_isa::all:
      return "all";
  }
  return "unknown";
}

class CpuBackend final : public Backend, public Bf16GemmTuning {
 public:
  CpuBackend(int threads, bool onednn_only, Bf16GemmCompute bf16_gemm)
      : gemm_on_f32_(bf16_gemm == Bf16GemmCompute::f32), onednn_only_(onednn_only) {
    ST_CHECK(threads >= 0, "CPU backend: thread count must be >= 0 (0 = the affinity mask), got ", threads);
    threads_ = threads > 0 ? threads : CpuMask::of_this_process().count();
    // Before any primitive exists: oneDNN sizes its parallel work from omp_get_max_threads().
    omp_set_num_threads(threads_);
    ST_DNNL_CHECK(ctx_ = std::make_shared<cpu::OneDnnContext>());
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    const auto bf16_bits = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
    native_bf16_ = (static_cast<unsigned>(isa) & bf16_bits) == bf16_bits;
    isa_ = isa_name(isa);
    const dnnl_version_t* v = dnnl_version();
    description_ =
        detail::concat("cpu (oneDNN ", v->major, ".", v->minor, ".", v->patch, ", ", threads_,
                       threads_ == 1 ? " thread" : " threads", ", ISA ", isa_name(dnnl::get_effective_cpu_isa()),
                       onednn_only_ ? ", oneDNN primitives only" : "", ")");
  }

  Device device() const override { return Device::cpu; }
  std::string description() const override { return description_; }
  int num_threads() const override { return threads_; }

  Tensor empty(Shape shape, DType dtype, std::string name) override {
    return Tensor(std::move(shape), dtype, std::move(name));
  }
  Tensor pinned(Shape shape, DType dtype, std::string name) override {
    return Tensor(std::move(shape), dtype, std::move(name));
  }
  int64_t memory_in_use() const override { return 0; }

  Stream& compute_stream() override { return compute_; }
  Stream& copy_stream() override { return copy_; }
  Stream& comm_stream() override { return comm_; }
  std::unique_ptr<Event> make_event(std::string label) override {
    return std::make_unique<cpu::InlineEvent>(std::move(label));
  }

  PrecisionSupport precision_support(DType t) const override {
    switch (t) {
      case DType::f32: return {true, "f32"};
      case DType::bf16:
        if (native_bf16_)
          return {true, "bf16 on oneDNN's bf16 kernels (ISA " + isa_ + "), f32 accumulation" +
                            (gemm_on_f32() ? "; dense and 1x1 convolution GEMMs as f32 GEMMs on widened bf16" : "") +
                            (onednn_only_ ? "" : "; one-channel first layers into at most 8 on f32 FMAs")};
        return {false, "bf16 emulated: f32 compute on bf16 storage (oneDNN's ISA here is " + isa_ +
                           ", without AVX512-BF16 instructions)"};
      case DType::f16:
        return {false, "f16 emulated: storage only on the CPU, f32 compute rounded to f16 at layer boundaries"};
      default: break;
    }
    ST_FAIL("the cpu backend computes in f32, bf16 or f16, not ", dtype_name(t));
  }

  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* = nullptr) override {
    if (gemm_choosable(shape.dtype) && cpu::is_pointwise(shape)) return make_gemm_conv(shape);
    if (emulated(shape.dtype) || narrow_on_f32(shape))
      return cpu::make_emulated_conv(make_conv(as_f32(shape)), shape);
    if (cpu::is_pointwise(shape) && !onednn_only_) return cpu::make_pointwise_conv(ctx_, shape);
    if (cpu::prefers_few_taps(shape) && !onednn_only_) return cpu::make_few_taps_conv(shape);
    if (cpu::prefers_narrow_rows(shape) && !onednn_only_) return cpu::make_narrow_rows_conv(shape);
    if (cpu::prefers_direct_backward_data(shape) && !onednn_only_)
      return cpu::make_direct_backward_data_conv(cpu::make_onednn_conv(ctx_, shape), shape);
    return cpu::make_onednn_conv(ctx_, shape);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape, Stream* = nullptr) override {
    if (gemm_choosable(shape.dtype)) return make_gemm_inner_product(shape);
    if (emulated(shape.dtype)) return cpu::make_emulated_inner_product(make_inner_product(as_f32(shape)), shape);
    if (onednn_only_) return cpu::make_onednn_inner_product(ctx_, shape);
    return cpu::make_gemm_inner_product(shape);
  }
  // Activations applied while the output is in cache: f32 first layers on the few-taps and the
  // narrow-rows ops, per tile (conv_few_taps.cpp, conv_narrow_rows.cpp); bf16 convolutions on oneDNN
  // as the primitive's post-op (the matmul of pointwise ones, matmul_inner_product.cpp, and the
  // convolution primitive, conv_onednn.cpp).
  std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                       Stream* stream) override {
    if (activation != Activation::none && cpu::prefers_few_taps(shape) && !onednn_only_)
      return cpu::make_few_taps_activated_conv(shape, activation);
    if (activation != Activation::none && cpu::prefers_narrow_rows(shape) && !onednn_only_)
      return cpu::make_narrow_rows_activated_conv(shape, activation);
    if (activation != Activation::none && shape.dtype == DType::bf16 && !emulated(shape.dtype) && !onednn_only_) {
      Stream& on = stream ? *stream : compute_stream();
      if (cpu::is_pointwise(shape) && !gemm_on_f32()) {
        gemm_shapes_.record(shape);
        return compose_post_activated_conv(shape, activation, cpu::make_pointwise_conv(ctx_, shape, activation), on,
                                           pool_absorption());
      }
      if (!cpu::is_pointwise(shape) && !narrow_on_f32(shape))
        return compose_post_activated_conv(shape, activation, cpu::make_onednn_conv(ctx_, shape, activation), on,
                                           pool_absorption());
    }
    return Backend::make_activated_conv(shape, activation, stream);
  }
  // f32 separable convolutions run fused image by image (separable_conv_fused.cpp); other types, and
  // onednn_only, compose the two convolutions.
  std::unique_ptr<SeparableConvOp> make_separable_conv(const SeparableConvShape& shape, Stream* stream) override {
    if (cpu::prefers_fused_separable(shape) && !onednn_only_) return cpu::make_fused_separable_conv(shape);
    return Backend::make_separable_conv(shape, stream);
  }
  // Max pooling runs the direct op (max_pool_direct.cpp) at every channel count and storage type (f16
  // and emulated bf16 too: it only compares and copies, so it needs no f32 round trip). Measured with
  // perf/bench_pool (batch 64, one thread, 2x2/2) its training forward + backward beat oneDNN 2.6's jit
  // pooling at every shape of fmnist_sepcnn (2-7x) and lenet (1.2-4x), f32 and bf16 (perf/README.md);
  // only the inference forward of lenet's small pools is slower (0.5-0.7x, under 0.15 ms).
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* = nullptr) override {
    if (shape.kind == PoolKind::max && !onednn_only_) return cpu::make_direct_max_pool(shape);
    if (emulated(shape.dtype)) return cpu::make_emulated_pool(make_pool(as_f32(shape)), shape);
    return cpu::make_onednn_pool(ctx_, shape);
  }

  void synchronize() override { ST_DNNL_CHECK(ctx_->stream.wait()); }

  Bf16GemmTuning* bf16_gemm_tuning() override { return bf16_gemm_tuning_available() ? this : nullptr; }
  Bf16GemmCompute bf16_gemm() const override { return gemm_on_f32_ ? Bf16GemmCompute::f32 : Bf16GemmCompute::bf16; }
  void set_bf16_gemm(Bf16GemmCompute compute) override {
    ST_CHECK(compute != Bf16GemmCompute::automatic, "set_bf16_gemm takes bf16 or f32, not auto");
    gemm_on_f32_ = compute == Bf16GemmCompute::f32;
  }
  std::vector<Bf16GemmShapeTiming> time_bf16_gemm_shapes(int rounds, double budget_s) override {
    const cpu::Bf16GemmFactories make{[this](const ConvShape& s, bool on_f32) { return make_gemm_conv(s, on_f32); },
                                      [this](const InnerProductShape& s, bool on_f32) {
                                        return make_gemm_inner_product(s, on_f32);
                                      }};
    return gemm_shapes_.time(make, rounds, budget_s);
  }

 private:
  // bf16 convolutions composed with their activation take over a max pooling after them (the direct op),
  // forming the activation's gradient at the pooled size: a full-size pass of it saved (perf/README).
  static PoolAbsorption pool_absorption() {
    return {[](const PoolShape& p) { return cpu::make_direct_max_pool(p); },
            [](const Shape& shape, DType t, const std::string& name) { return Tensor(shape, t, name); }};
  }
  // Whether ops of this storage type run as f32 ops on that storage (throws for non-float types).
  bool emulated(DType t) const { return !precision_support(t).native; }
  // bf16 first layers of one channel into a few (LeNet's) compute in f32 on the narrow-rows op: the
  // bf16 products are exact in f32 either way, and oneDNN's bf16 kernel was the slower (bench_layers).
  bool narrow_on_f32(const ConvShape& shape) const {
    return shape.dtype == DType::bf16 && cpu::prefers_narrow_rows(as_f32(shape)) && !onednn_only_;
  }
  // Whether GEMM-shaped ops (inner products, pointwise convolutions) of this storage type may run two
  // ways (native bf16 on the fast paths), and whether they now run as f32 GEMMs on widened operands.
  bool gemm_choosable(DType t) const { return t == DType::bf16 && bf16_gemm_tuning_available(); }
  bool bf16_gemm_tuning_available() const { return native_bf16_ && !onednn_only_; }
  bool gemm_on_f32() const { return gemm_on_f32_ && bf16_gemm_tuning_available(); }
  // A bf16 GEMM-shaped op, recorded for time_bf16_gemm_shapes, made the way now set.
  std::unique_ptr<ConvOp> make_gemm_conv(const ConvShape& shape) {
    gemm_shapes_.record(shape);
    return make_gemm_conv(shape, gemm_on_f32());
  }
  std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& shape) {
    gemm_shapes_.record(shape);
    return make_gemm_inner_product(shape, gemm_on_f32());
  }
  // The two ways: oneDNN's bf16 matmul, or the f32 op on operands widened from bf16.
  std::unique_ptr<ConvOp> make_gemm_conv(const ConvShape& shape, bool on_f32) {
    return on_f32 ? cpu::make_emulated_conv(make_conv(as_f32(shape)), shape) : cpu::make_pointwise_conv(ctx_, shape);
  }
  std::unique_ptr<InnerProductOp> make_gemm_inner_product(const InnerProductShape& shape, bool on_f32) {
    return on_f32 ? cpu::make_emulated_inner_product(make_inner_product(as_f32(shape)), shape)
                  : cpu::make_matmul_inner_product(ctx_, shape);
  }
  template <class Shape>
  static Shape as_f32(Shape s) {
    s.dtype = DType::f32;
    return s;
  }
  bool native_bf16_ = false;
  bool gemm_on_f32_ = false;      // Bf16GemmTuning: bf16 GEMM-shaped ops as f32 GEMMs
  cpu::Bf16GemmShapes gemm_shapes_;  // the bf16 GEMM-shaped ops made, for time_bf16_gemm_shapes
  std::string isa_;
  // onednn_only (run.cpu_onednn_only) runs inner products, pointwise convolutions, first-layer
  // convolutions, separable convolutions and max pooling on oneDNN's primitives instead of sgemm on
  // plain layouts, the direct few-taps convolution, the fused separable convolution and the direct max
  // pooling (for comparisons; see perf/README.md).
  bool onednn_only_ = false;
  cpu::InlineStream compute_{"compute"};
  cpu::InlineStream copy_{"copy"};
  cpu::InlineStream comm_{"comm"};
  int threads_ = 1;
  cpu::OneDnnContextPtr ctx_;
  std::string description_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads, bool onednn_only, Bf16GemmCompute bf16_gemm) {
  return std::make_unique<CpuBackend>(threads, onednn_only, bf16_gemm);
}

}  // namespace scaletrain
