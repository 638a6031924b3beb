// Tensor storage: aligned host allocation, per-device allocators, views and shape helpers.
#include "scaletrain/core/tensor.hpp"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>

namespace scaletrain {
namespace {

void* host_allocate(size_t bytes) { return aligned_host_alloc(bytes); }
void host_release(void* p) { aligned_host_free(p); }

std::array<Allocator, 2>& allocators() {
  static std::array<Allocator, 2> a{Allocator{host_allocate, host_release}, Allocator{}};
  return a;
}

}  // namespace

std::string_view device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

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

void register_allocator(Device d, Allocator a) { allocators()[static_cast<int>(d)] = a; }

void* aligned_host_alloc(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  ST_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  return p;
}

void aligned_host_free(void* p) { std::free(p); }

Tensor::Tensor(Shape shape, DType dtype, Device device)
    : shape_(std::move(shape)), numel_(shape_numel(shape_)), dtype_(dtype), device_(device) {
  for (int64_t d : shape_) ST_CHECK(d >= 0, "negative dimension in tensor shape ", shape_string(shape_));
  const Allocator& a = allocators()[static_cast<int>(device)];
  ST_CHECK(a.allocate != nullptr, "no allocator for device '", device_name(device),
           "': this build has no backend for it");
  void* p = a.allocate(bytes());
  auto release = a.release;
  owner_ = std::shared_ptr<void>(p, [release](void* q) { release(q); });
  data_ = p;
}

Tensor Tensor::zeros(Shape shape, DType dtype, Device device) {
  Tensor t(std::move(shape), dtype, device);
  t.fill_zero();
  return t;
}

int64_t Tensor::dim(int i) const {
  const int r = rank();
  if (i < 0) i += r;
  ST_CHECK(i >= 0 && i < r, "dimension index ", i, " out of range for shape ", shape_string(shape_));
  return shape_[static_cast<size_t>(i)];
}

void Tensor::fill_zero() {
  ST_CHECK(device_ == Device::cpu, "fill_zero on a ", device_name(device_), " tensor: use the backend");
  if (data_) std::memset(data_, 0, bytes());
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
  ST_CHECK(device_ == Device::cpu, "clone of a ", device_name(device_), " tensor: use the backend");
  Tensor t(shape_, dtype_, device_);
  if (bytes()) std::memcpy(t.data_, data_, bytes());
  return t;
}

void Tensor::check_type(DType want) const {
  ST_CHECK(want == dtype_, "tensor of dtype ", dtype_name(dtype_), " accessed as ", dtype_name(want));
}

}  // namespace scaletrain
