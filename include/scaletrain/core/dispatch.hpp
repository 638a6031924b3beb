// visit_float_type: calls f(T{}) with T the storage type a floating DType names (float, bf16, f16),
// so code that launches kernels/ functors templated over the storage type picks the instance once.
#pragma once
#include "scaletrain/core/dtype.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {

template <class F>
decltype(auto) visit_float_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::bf16: return f(bf16{});
    case DType::f16: return f(f16{});
    default: break;
  }
  ST_FAIL("expected a floating-point storage type (f32, bf16, f16), got ", dtype_name(t));
}

}  // namespace scaletrain
