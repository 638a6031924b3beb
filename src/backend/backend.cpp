// Backend: the device-kind names, the factory, the host implementations of copies and fills that
// the CPU and simulated devices share (the CUDA backend overrides them), and the default separable
// convolution (its two ConvOps composed).
#include "scaletrain/backend/backend.hpp"

#include <algorithm>
#include <cstring>

#include "scaletrain/backend/inner_product_matmul.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {

DeviceKind parse_device_kind(const std::string& name) {
  if (name == "auto") return DeviceKind::automatic;
  if (name == "cpu") return DeviceKind::cpu;
  if (name == "sim") return DeviceKind::sim;
  if (name == "cuda") return DeviceKind::cuda;
  ST_FAIL("run.device = '", name, "' is not one of auto, cpu, sim, cuda");
}

std::string device_kind_name(DeviceKind k) {
  switch (k) {
    case DeviceKind::automatic: return "auto";
    case DeviceKind::cpu: return "cpu";
    case DeviceKind::sim: return "sim";
    case DeviceKind::cuda: return "cuda";
  }
  return "?";
}

Bf16GemmCompute parse_bf16_gemm_compute(const std::string& name) {
  if (name == "auto") return Bf16GemmCompute::automatic;
  if (name == "bf16") return Bf16GemmCompute::bf16;
  if (name == "f32") return Bf16GemmCompute::f32;
  ST_FAIL("run.cpu_bf16_gemm = '", name, "' is not one of auto, bf16, f32");
}

std::string bf16_gemm_compute_name(Bf16GemmCompute c) {
  switch (c) {
    case Bf16GemmCompute::automatic: return "auto";
    case Bf16GemmCompute::bf16: return "bf16";
    case Bf16GemmCompute::f32: return "f32";
  }
  return "?";
}

DeviceResolution resolve_device_kind(DeviceKind requested) {
  if (requested != DeviceKind::automatic) return {requested, ""};
#if SCALETRAIN_HAVE_CUDA
  const int gpus = visible_gpu_count();
  if (gpus > 0) return {DeviceKind::cuda, std::to_string(gpus) + (gpus == 1 ? " GPU" : " GPUs") + " visible"};
  return {DeviceKind::cpu, "no GPU visible"};
#else
  return {DeviceKind::cpu, "this build has no CUDA backend"};
#endif
}

std::unique_ptr<Backend> make_backend(const BackendOptions& o) {
  switch (o.kind) {
    case DeviceKind::automatic: {
      BackendOptions resolved = o;
      resolved.kind = resolve_device_kind(o.kind).kind;
      return make_backend(resolved);
    }
    case DeviceKind::cpu: return make_cpu_backend(o.threads, o.onednn_only, o.bf16_gemm);
    case DeviceKind::sim: return make_sim_backend(o);
    case DeviceKind::cuda: return make_cuda_backend(o);
  }
  ST_FAIL("unknown device kind ", static_cast<int>(o.kind));
}

#if !SCALETRAIN_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions&) {
  ST_USER_FAIL("run.device = 'cuda': this build has no CUDA backend (configure with the cuda preset, or "
               "-DSCALETRAIN_ENABLE_CUDA=ON); use cpu or sim");
}

int visible_gpu_count() { return 0; }

std::string gpu_library_versions() { return ""; }
#endif

std::unique_ptr<KernelTrace> Backend::make_kernel_trace(std::string& why_not) {
  why_not = "the " + std::string(device_name(device())) +
            " backend keeps no record of kernels (cuda's comes from CUPTI, sim's from its streams' work items); "
            "run.profile = layers times its layers on the host clock";
  return nullptr;
}

std::unique_ptr<MatmulOp> Backend::make_matmul(const MatmulShape& shape, Stream* stream) {
  shape.validate();
  if (auto form = inner_product_form(shape)) {
    if (!inner_products_) inner_products_ = std::make_shared<SharedInnerProducts>();
    auto make = [&](const InnerProductShape& s) {
      return std::shared_ptr<InnerProductOp>(make_inner_product(s, stream));
    };
    const Stream* on = stream ? stream : &compute_stream();
    return make_inner_product_matmul(inner_products_->get(*form, on, make), *form);
  }
  return make_general_matmul(shape, stream);
}

Tensor Backend::zeros(Shape shape, DType dtype, std::string name) {
  Tensor t = empty(std::move(shape), dtype, std::move(name));
  fill_zero_async(compute_stream(), t);
  return t;
}

Tensor Backend::download(const Tensor& t) {
  Tensor host(t.shape(), t.dtype(), t.name() + " (host copy)");
  copy_async(compute_stream(), host, t);
  compute_stream().synchronize();
  return host;
}

void Backend::upload(const Tensor& dst, const std::vector<float>& values) {
  ST_CHECK(dst.dtype() == DType::f32 && static_cast<int64_t>(values.size()) == dst.numel(), "upload into '",
           dst.name(), "': ", values.size(), " f32 values for a ", dtype_name(dst.dtype()), " tensor of ", dst.numel());
  Tensor host(dst.shape(), DType::f32, dst.name() + " (host copy)");
  std::copy(values.begin(), values.end(), host.data<float>());
  copy_async(compute_stream(), dst, host);
  compute_stream().synchronize();  // the host copy goes out of scope
}

void Backend::copy_async(Stream& stream, const Tensor& dst, const Tensor& src) {
  ST_CHECK(dst.bytes() == src.bytes(), "copy from '", src.name(), "' (", src.bytes(), " bytes) to '", dst.name(), "' (",
           dst.bytes(), " bytes): sizes differ");
  if (dst.bytes() == 0 || dst.device_raw() == src.device_raw()) return;
  const char* label = count_copy(counters_, dst, src);
  if (stream.runs_inline()) {
    std::memcpy(dst.device_raw(), src.device_raw(), dst.bytes());
    return;
  }
  // The tensors travel with the work, so their memory outlives the queued copy.
  stream.enqueue_kernel(label, [dst, src] { std::memcpy(dst.device_raw(), src.device_raw(), dst.bytes()); });
}

const char* Backend::count_copy(DeviceCounters& counters, const Tensor& dst, const Tensor& src) {
  const bool to_device = !host_accessible(dst.device()), from_device = !host_accessible(src.device());
  const auto bytes = static_cast<int64_t>(dst.bytes());
  if (to_device && !from_device) {
    counters.copy_to_device(bytes);
    return "memcpy HtoD";
  }
  if (from_device && !to_device) {
    counters.copy_to_host(bytes);
    return "memcpy DtoH";
  }
  counters.call();  // within one memory: a device copy (or, on cpu, a host one)
  return to_device ? "memcpy DtoD" : "memcpy HtoH";
}

void Backend::fill_zero_async(Stream& stream, const Tensor& dst) {
  if (dst.bytes() == 0) return;
  counters_.call();
  if (stream.runs_inline()) {
    std::memset(dst.device_raw(), 0, dst.bytes());
    return;
  }
  stream.enqueue_kernel("memset", [dst] { std::memset(dst.device_raw(), 0, dst.bytes()); });
}

std::unique_ptr<ActivatedConvOp> Backend::make_activated_conv(const ConvShape& shape, Activation activation,
                                                              Stream* stream) {
  return compose_activated_conv(shape, activation, make_conv(shape, stream), stream ? *stream : compute_stream());
}

std::unique_ptr<SeparableConvOp> Backend::make_separable_conv(const SeparableConvShape& shape, Stream* stream) {
  return compose_separable_conv(shape, make_conv(shape.depthwise, stream),
                                make_activated_conv(shape.pointwise, shape.activation, stream));
}

}  // namespace scaletrain
