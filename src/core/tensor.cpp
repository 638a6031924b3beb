// Tensor storage: aligned host allocation, adopted device allocations, checked host access, views
// and shape helpers.
#include "scaletrain/core/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace scaletrain {

std::string_view device_name(Device d) {
  switch (d) {
    case Device::cpu: return "cpu";
    case Device::sim: return "sim";
    case Device::cuda: return "cuda";
  }
  return "?";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_string(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << ']';
  return os.str();
}

void* aligned_host_alloc(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  ST_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  return p;
}

void aligned_host_free(void* p) { std::free(p); }

TensorStorage::~TensorStorage() {
  if (release) release(ptr);
}

Tensor::Tensor(Shape shape, DType dtype, std::string name)
    : shape_(std::move(shape)), numel_(shape_numel(shape_)), dtype_(dtype) {
  for (int64_t d : shape_) ST_CHECK(d >= 0, "negative dimension in tensor shape ", shape_string(shape_));
  storage_ = std::make_shared<TensorStorage>();
  storage_->bytes = bytes();
  storage_->ptr = aligned_host_alloc(storage_->bytes);
  storage_->name = std::move(name);
  storage_->release = [](void* p) { aligned_host_free(p); };
  data_ = storage_->ptr;
}

Tensor Tensor::zeros(Shape shape, DType dtype, std::string name) {
  Tensor t(std::move(shape), dtype, std::move(name));
  t.fill_zero();
  return t;
}

Tensor Tensor::adopt(void* ptr, size_t bytes, Shape shape, DType dtype, Device device, std::string name,
                     std::function<void(void*)> release) {
  Tensor t;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.dtype_ = dtype;
  ST_CHECK(t.bytes() <= bytes, "tensor '", name, "' of ", shape_string(t.shape_), " ", dtype_name(dtype),
           " does not fit in its allocation of ", bytes, " bytes");
  t.storage_ = std::make_shared<TensorStorage>();
  t.storage_->ptr = ptr;
  t.storage_->bytes = bytes;
  t.storage_->device = device;
  t.storage_->name = std::move(name);
  t.storage_->release = std::move(release);
  t.data_ = ptr;
  return t;
}

const std::string& Tensor::name() const {
  static const std::string unnamed = "(unnamed)";
  return storage_ && !storage_->name.empty() ? storage_->name : unnamed;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  if (i < 0) i += r;
  ST_CHECK(i >= 0 && i < r, "dimension index ", i, " out of range for shape ", shape_string(shape_));
  return shape_[static_cast<size_t>(i)];
}

void Tensor::fill_zero() {
  if (data_) std::memset(raw(), 0, bytes());
}

Tensor Tensor::reshape(Shape shape) const {
  ST_CHECK(shape_numel(shape) == numel_, "cannot reshape ", shape_string(shape_), " to ", shape_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::view(int64_t offset_elems, Shape shape) const {
  const int64_t n = shape_numel(shape);
  ST_CHECK(offset_elems >= 0 && offset_elems + n <= numel_, "view of ", shape_string(shape), " at offset ",
           offset_elems, " does not fit in a tensor of ", numel_, " elements");
  Tensor t = *this;
  t.data_ = static_cast<char*>(data_) + offset_elems * static_cast<int64_t>(dtype_size(dtype_));
  t.shape_ = std::move(shape);
  t.numel_ = n;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(shape_, dtype_, storage_ ? storage_->name : std::string());
  if (bytes()) std::memcpy(t.raw(), raw(), bytes());
  return t;
}

void Tensor::check_type(DType want) const {
  ST_CHECK(want == dtype_, "tensor '", name(), "' of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(want));
}

void Tensor::host_access_error() const {
  ST_FAIL("host access to tensor '", name(), "' ", shape_string(shape_), " ", dtype_name(dtype_), ", which lives on the ",
          device_name(device()), " device: copy it to a host tensor through the backend (Backend::copy_async, then "
          "synchronize) before reading it on the host");
}

}  // namespace scaletrain
