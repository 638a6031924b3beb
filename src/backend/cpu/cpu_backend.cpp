// The CPU backend: one oneDNN engine and stream, OpenMP threads set to the cores this process is
// bound to (its affinity mask) unless a thread count is given, host memory as device memory,
// inline streams, and the heavy operators from the operator tables (operator_table.hpp: oneDNN
// primitives, sgemm, bf16 matmul, direct loops, each where its condition admits it). bf16 runs on
// oneDNN's bf16 kernels where the CPU has AVX512-BF16, the GEMM-shaped ops as f32 GEMMs where
// run.cpu_bf16_gemm (set or timed: Bf16GemmTuning) says; f16, and bf16 elsewhere, run emulated (f32
// ops on low-precision storage).
#include <omp.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/bf16_gemm_tuning.hpp"
#include "scaletrain/backend/cpu/bf16_gemm_shapes.hpp"
#include "scaletrain/backend/cpu/inline_stream.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/backend/cpu/operator_table.hpp"
#include "scaletrain/backend/queued_ops.hpp"
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
    for (Stream* s : {static_cast<Stream*>(&compute_), static_cast<Stream*>(&copy_), static_cast<Stream*>(&comm_)})
      s->count_into(counters());
    description_ =
        detail::concat("cpu (oneDNN ", v->major, ".", v->minor, ".", v->patch, ", ", threads_,
                       threads_ == 1 ? " thread" : " threads", ", ISA ", isa_name(dnnl::get_effective_cpu_isa()),
                       onednn_only_ ? ", oneDNN primitives only" : "", ")");
  }

  Device device() const override { return Device::cpu; }
  std::string description() const override { return description_; }
  int num_threads() const override { return threads_; }

  Tensor empty(Shape shape, DType dtype, std::string name) override {
    counters().allocation();
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
    auto e = std::make_unique<cpu::InlineEvent>(std::move(label));
    e->count_into(counters());
    return e;
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

  // The heavy operators: the first candidate of their table (operator_table.cpp) that admits the shape.
  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape, Stream* stream = nullptr) override {
    return queued_ops::wrap(cpu::choose_conv(op_context(stream), shape), stream ? *stream : compute_);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape, Stream* stream = nullptr) override {
    return queued_ops::wrap(cpu::choose_inner_product(op_context(stream), shape), stream ? *stream : compute_);
  }
  std::unique_ptr<ActivatedConvOp> make_activated_conv(const ConvShape& shape, Activation activation,
                                                       Stream* stream) override {
    return queued_ops::wrap(cpu::choose_activated_conv(op_context(stream), {shape, activation}), stream ? *stream : compute_);
  }
  std::unique_ptr<SeparableConvOp> make_separable_conv(const SeparableConvShape& shape, Stream* stream) override {
    return queued_ops::wrap(cpu::choose_separable_conv(op_context(stream), shape), stream ? *stream : compute_);
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape, Stream* stream = nullptr) override {
    return queued_ops::wrap(cpu::choose_pool(op_context(stream), shape), stream ? *stream : compute_);
  }

  std::unique_ptr<MatmulOp> make_general_matmul(const MatmulShape& shape, Stream* stream) override {
    return queued_ops::wrap(cpu::make_onednn_matmul(ctx_, shape, native_bf16_), stream ? *stream : compute_);
  }

  void drain_all() override { ST_DNNL_CHECK(ctx_->stream.wait()); }

  Bf16GemmTuning* bf16_gemm_tuning() override { return bf16_gemm_tuning_available() ? this : nullptr; }
  Bf16GemmCompute bf16_gemm() const override { return gemm_on_f32_ ? Bf16GemmCompute::f32 : Bf16GemmCompute::bf16; }
  void set_bf16_gemm(Bf16GemmCompute compute) override {
    ST_CHECK(compute != Bf16GemmCompute::automatic, "set_bf16_gemm takes bf16 or f32, not auto");
    gemm_on_f32_ = compute == Bf16GemmCompute::f32;
  }
  std::vector<Bf16GemmShapeTiming> time_bf16_gemm_shapes(int rounds, double budget_s) override {
    // Each shape made one way or the other, not recorded again.
    auto one_way = [this](bool on_f32) {
      cpu::CpuOpContext c = op_context(nullptr);
      c.settings.bf16_gemm_on_f32 = on_f32;
      c.gemm_shapes = nullptr;
      return c;
    };
    const cpu::Bf16GemmFactories make{
        [one_way](const ConvShape& s, bool on_f32) { return cpu::choose_conv(one_way(on_f32), s); },
        [one_way](const InnerProductShape& s, bool on_f32) { return cpu::choose_inner_product(one_way(on_f32), s); }};
    return gemm_shapes_.time(make, rounds, budget_s);
  }

 private:
  cpu::CpuOpSettings settings() const { return {native_bf16_, onednn_only_, gemm_on_f32_}; }
  cpu::CpuOpContext op_context(Stream* stream) {
    return {settings(), ctx_, stream ? stream : &compute_, &gemm_shapes_};
  }
  bool bf16_gemm_tuning_available() const { return native_bf16_ && !onednn_only_; }
  bool gemm_on_f32() const { return settings().gemm_on_f32(); }
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
