// Tensor: a shape, a dtype, a device and a reference-counted, named buffer (64-byte aligned on the
// host). Views share the buffer of their parent at an offset; that is how parameters and gradients
// live inside the flat per-bucket buffers of comm/ without a copy. Host code reads a tensor with
// data<T>() / raw(), which throw an Error naming the tensor when its memory is on a device; the
// backends and kernel launches take the device address with device_data<T>() / device_raw().
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "scaletrain/core/dtype.hpp"
#include "scaletrain/core/error.hpp"

namespace scaletrain {

// Where a tensor's memory lives. cpu: host memory (the CPU backend's device is the host); sim: the
// simulated device's memory (backend/sim), cuda: GPU memory.
enum class Device : uint8_t { cpu, sim, cuda };
std::string_view device_name(Device d);
// Whether host code may read and write memory of this device directly.
constexpr bool host_accessible(Device d) { return d == Device::cpu; }

using Shape = std::vector<int64_t>;
int64_t shape_numel(const Shape& s);
// "[2, 28, 28, 1]"
std::string shape_string(const Shape& s);

// 64-byte aligned host allocation that throws Error when the system is out of memory.
void* aligned_host_alloc(size_t bytes);
void aligned_host_free(void* p);

// One allocation: its address, size, device and name, and how to give it back.
struct TensorStorage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device = Device::cpu;
  std::string name;
  std::function<void(void*)> release;
  TensorStorage() = default;
  TensorStorage(const TensorStorage&) = delete;
  TensorStorage& operator=(const TensorStorage&) = delete;
  ~TensorStorage();
};

class Tensor {
 public:
  Tensor() = default;
  // Allocates an uninitialized host tensor. `name` appears in errors about it.
  explicit Tensor(Shape shape, DType dtype = DType::f32, std::string name = {});
  static Tensor zeros(Shape shape, DType dtype = DType::f32, std::string name = {});
  // A tensor over memory a backend allocated: `release(ptr)` runs when the last view is gone.
  static Tensor adopt(void* ptr, size_t bytes, Shape shape, DType dtype, Device device, std::string name,
                      std::function<void(void*)> release);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device::cpu; }
  bool on_host() const { return host_accessible(device()); }
  // The buffer's name ("conv2d_1.pre", "model.gradients"); views share their parent's.
  const std::string& name() const;

  // Host access: throws Error naming the tensor when it lives on a device.
  void* raw() {
    check_host();
    return data_;
  }
  const void* raw() const {
    check_host();
    return data_;
  }
  template <class T>
  T* data() {
    check_host();
    check_type(dtype_of<T>::value);
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data() const {
    check_host();
    check_type(dtype_of<T>::value);
    return static_cast<const T*>(data_);
  }

  // The address on the tensor's own device, for backends, kernel launches and device-aware
  // communication. Host code must not dereference it unless on_host().
  void* device_raw() const { return data_; }
  template <class T>
  T* device_data() const {
    check_type(dtype_of<T>::value);
    return static_cast<T*>(data_);
  }

  // Zeroes the contents (host tensors only; device tensors go through the backend).
  void fill_zero();
  // A tensor sharing this buffer with another shape of the same number of elements.
  Tensor reshape(Shape shape) const;
  // A tensor of `shape` sharing this buffer, starting `offset_elems` elements in.
  Tensor view(int64_t offset_elems, Shape shape) const;
  // A deep copy (host tensors only; device tensors go through the backend).
  Tensor clone() const;

 private:
  void check_type(DType want) const;
  void check_host() const {
    if (storage_ && !host_accessible(storage_->device)) [[unlikely]]
      host_access_error();
  }
  [[noreturn]] void host_access_error() const;

  std::shared_ptr<TensorStorage> storage_;
  void* data_ = nullptr;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::f32;
};

}  // namespace scaletrain
