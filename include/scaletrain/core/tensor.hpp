// Tensor: a shape, a dtype, a device and a reference-counted buffer (64-byte aligned on the host).
// Views share the buffer of their parent at an offset; that is how parameters and gradients live
// inside the flat per-bucket buffers of comm/ without a copy.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/core/dtype.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {

enum class Device : uint8_t { cpu, cuda };
std::string_view device_name(Device d);

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);
// "[2, 28, 28, 1]"
std::string shape_string(const Shape& s);

// Memory for one device kind. The CPU allocator is built in; the CUDA backend registers its own.
struct Allocator {
  void* (*allocate)(size_t bytes) = nullptr;
  void (*release)(void* p) = nullptr;
};
void register_allocator(Device d, Allocator a);

// 64-byte aligned host allocation that throws Error when the system is out of memory.
void* aligned_host_alloc(size_t bytes);
void aligned_host_free(void* p);

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialized tensor.
  explicit Tensor(Shape shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(Shape shape, DType dtype = DType::f32, Device device = Device::cpu);

  bool defined() const { return owner_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }

  template <class T>
  T* data() {
    check_type(dtype_of<T>::value);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_type(dtype_of<T>::value);
    return static_cast<const T*>(data_);
  }

  // Zeroes the contents (host tensors only; device tensors go through the backend).
  void fill_zero();
  // A tensor sharing this buffer with another shape of the same number of elements.
  Tensor reshape(Shape shape) const;
  // A tensor of `shape` sharing this buffer, starting `offset_elems` elements in.
  Tensor view(int64_t offset_elems, Shape shape) const;
  // A deep copy on the same device (host only for now).
  Tensor clone() const;

 private:
  void check_type(DType want) const;

  std::shared_ptr<void> owner_;
  void* data_ = nullptr;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
};

}  // namespace scaletrain
