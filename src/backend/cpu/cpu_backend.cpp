// The CPU backend: one oneDNN engine and stream, OpenMP threads set to the cores this process is
// bound to (its affinity mask) unless a thread count is given, and the oneDNN op factories.
#include <omp.h>
#include <sched.h>

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/backend/cpu/onednn_ops.hpp"
#include "scaletrain/core/check_dnnl.hpp"

namespace scaletrain {
namespace {

int affinity_cpu_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  ST_CHECK(sched_getaffinity(0, sizeof(set), &set) == 0, "sched_getaffinity failed: cannot read the CPUs this process ",
           "is bound to; pass an explicit thread count");
  const int n = CPU_COUNT(&set);
  ST_CHECK(n > 0, "the affinity mask of this process is empty");
  return n;
}

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

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) {
    ST_CHECK(threads >= 0, "CPU backend: thread count must be >= 0 (0 = the affinity mask), got ", threads);
    threads_ = threads > 0 ? threads : affinity_cpu_count();
    // Before any primitive exists: oneDNN sizes its parallel work from omp_get_max_threads().
    omp_set_num_threads(threads_);
    ST_DNNL_CHECK(ctx_ = std::make_shared<cpu::OneDnnContext>());
    const dnnl_version_t* v = dnnl_version();
    description_ =
        detail::concat("cpu (oneDNN ", v->major, ".", v->minor, ".", v->patch, ", ", threads_,
                       threads_ == 1 ? " thread" : " threads", ", ISA ", isa_name(dnnl::get_effective_cpu_isa()), ")");
  }

  Device device() const override { return Device::cpu; }
  std::string description() const override { return description_; }
  int num_threads() const override { return threads_; }

  std::unique_ptr<ConvOp> make_conv(const ConvShape& shape) override {
    if (cpu::is_pointwise(shape) && !onednn_only()) return cpu::make_pointwise_conv(shape);
    return cpu::make_onednn_conv(ctx_, shape);
  }
  std::unique_ptr<InnerProductOp> make_inner_product(const InnerProductShape& shape) override {
    if (onednn_only()) return cpu::make_onednn_inner_product(ctx_, shape);
    return cpu::make_gemm_inner_product(shape);
  }
  std::unique_ptr<PoolOp> make_pool(const PoolShape& shape) override {
    if (shape.kind == PoolKind::max && shape.channels % 16 != 0 && !onednn_only())
      return cpu::make_direct_max_pool(shape);
    return cpu::make_onednn_pool(ctx_, shape);
  }

  void synchronize() override { ST_DNNL_CHECK(ctx_->stream.wait()); }

 private:
  // SCALETRAIN_CPU_ONEDNN_ONLY=1 runs inner products, pointwise convolutions and max pooling on
  // oneDNN's primitives instead of sgemm on plain layouts and the direct max pooling of channel
  // counts that are not a multiple of 16 (for comparisons; see perf/README.md).
  static bool onednn_only() {
    const char* v = std::getenv("SCALETRAIN_CPU_ONEDNN_ONLY");
    return v && std::string(v) == "1";
  }
  int threads_ = 1;
  cpu::OneDnnContextPtr ctx_;
  std::string description_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int threads) { return std::make_unique<CpuBackend>(threads); }

}  // namespace scaletrain
