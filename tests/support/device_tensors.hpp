// Test support: copies between host tensors and a backend's device memory, synchronized.
#pragma once
#include <cstring>
#include <vector>

#include "scaletrain/backend/backend.hpp"
#include "scaletrain/core/half.hpp"

namespace scaletrain::testing {

// A device copy of a host tensor, stored as `dtype`: f32 values rounded to bf16 or f16; other
// types (i32, i64) copied as they are, which needs dtype == host.dtype().
inline Tensor on_device(Backend& backend, const Tensor& host, DType dtype) {
  Tensor stored(host.shape(), dtype, host.name());
  const bool rounded = host.dtype() == DType::f32 && (dtype == DType::bf16 || dtype == DType::f16);
  if (!rounded) std::memcpy(stored.raw(), host.raw(), host.bytes());
  for (int64_t i = 0; i < host.numel() && rounded; ++i) {
    const float v = host.data<float>()[i];
    if (dtype == DType::bf16) stored.data<bf16>()[i] = from_float<bf16>(v);
    else stored.data<f16>()[i] = from_float<f16>(v);
  }
  Tensor d = backend.empty(host.shape(), dtype, host.name());
  backend.copy_async(backend.compute_stream(), d, stored);
  backend.synchronize();
  return d;
}

inline Tensor on_device(Backend& backend, const Tensor& host) { return on_device(backend, host, host.dtype()); }

// A device tensor of `shape` in `dtype` holding f32 `values` (rounded to it).
inline Tensor values_on_device(Backend& backend, const Shape& shape, const std::vector<float>& values, DType dtype) {
  Tensor host(shape, DType::f32, "x");
  std::memcpy(host.raw(), values.data(), values.size() * sizeof(float));
  return on_device(backend, host, dtype);
}

// The values of a device tensor of T's type (float: f32; int64_t: i64).
template <class T = float>
std::vector<T> to_host(Backend& backend, const Tensor& t) {
  Tensor h(t.shape(), t.dtype(), "host");
  backend.copy_async(backend.compute_stream(), h, t);
  backend.synchronize();
  return std::vector<T>(h.data<T>(), h.data<T>() + h.numel());
}

}  // namespace scaletrain::testing
