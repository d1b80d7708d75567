// Tensor construction, views and host transfer.
#include "tessera/runtime/tensor.hpp"

#include <stdexcept>

#include "tessera/precision/convert.hpp"
#include "tessera/runtime/device.hpp"

namespace tessera {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_string(const Shape& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

Tensor::Tensor(std::shared_ptr<Storage> storage, std::size_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset), shape_(std::move(shape)), dtype_(dtype) {}

Tensor Tensor::empty(Device& device, Shape shape, DType dtype, MemoryCategory category, MemoryKind kind) {
  for (std::int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("Tensor::empty: negative dimension in " + shape_string(shape));
  }
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  return Tensor(Storage::allocate(device, bytes, category, kind), 0, std::move(shape), dtype);
}

Tensor Tensor::zeros(Device& device, Shape shape, DType dtype, MemoryCategory category, MemoryKind kind) {
  Tensor t = empty(device, std::move(shape), dtype, category, kind);
  t.zero_();
  return t;
}

Tensor Tensor::from_host(Device& device, std::span<const float> values, Shape shape, DType dtype,
                         MemoryCategory category) {
  Tensor t = empty(device, std::move(shape), dtype, category);
  t.copy_from_host_f32(values);
  return t;
}

Tensor Tensor::from_host_i32(Device& device, std::span<const std::int32_t> values, Shape shape,
                             MemoryCategory category) {
  Tensor t = empty(device, std::move(shape), DType::kI32, category);
  if (static_cast<std::int64_t>(values.size()) != t.numel()) {
    throw std::invalid_argument("Tensor::from_host_i32: " + std::to_string(values.size()) + " values for shape " +
                                shape_string(t.shape()));
  }
  device.copy_from_host(t.data(), values.data(), t.nbytes());
  return t;
}

std::int64_t Tensor::dim(int i) const {
  const int n = ndim();
  const int k = i < 0 ? i + n : i;
  if (k < 0 || k >= n) {
    throw std::out_of_range("Tensor::dim(" + std::to_string(i) + ") of shape " + shape_string(shape_));
  }
  return shape_[k];
}

Device& Tensor::device() const { return storage_->device(); }
MemoryCategory Tensor::category() const { return storage_->category(); }
MemoryKind Tensor::memory_kind() const { return storage_->memory_kind(); }

// A storage without memory (the meta device, or zero bytes) gives null for every view.
void* Tensor::data() {
  return storage_ && storage_->data() != nullptr ? static_cast<char*>(storage_->data()) + offset_ : nullptr;
}
const void* Tensor::data() const {
  return storage_ && storage_->data() != nullptr ? static_cast<const char*>(storage_->data()) + offset_ : nullptr;
}

void Tensor::record_stream(Stream& stream) const {
  if (storage_) storage_->record_stream(stream);
}

Tensor Tensor::reinterpret(DType dtype, Shape shape) const {
  const std::size_t bytes = static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype);
  if (bytes > nbytes()) {
    throw std::out_of_range("Tensor::reinterpret: " + std::to_string(bytes) + " bytes of " + dtype_name(dtype) +
                            " exceed the tensor's " + std::to_string(nbytes()));
  }
  return Tensor(storage_, offset_, std::move(shape), dtype);
}

Tensor Tensor::view(std::int64_t element_offset, Shape shape) const {
  const std::size_t esize = dtype_size(dtype_);
  const std::size_t begin = offset_ + static_cast<std::size_t>(element_offset) * esize;
  const std::size_t end = begin + static_cast<std::size_t>(shape_numel(shape)) * esize;
  if (element_offset < 0 || end > storage_->bytes()) {
    throw std::out_of_range("Tensor::view: elements [" + std::to_string(element_offset) + ", +" +
                            std::to_string(shape_numel(shape)) + ") exceed the storage of " +
                            std::to_string(storage_->bytes() / esize) + " elements");
  }
  return Tensor(storage_, begin, std::move(shape), dtype_);
}

Tensor Tensor::reshape(Shape shape) const {
  if (shape_numel(shape) != numel()) {
    throw std::invalid_argument("Tensor::reshape: " + shape_string(shape_) + " to " + shape_string(shape));
  }
  return Tensor(storage_, offset_, std::move(shape), dtype_);
}

void Tensor::zero_() {
  if (nbytes() > 0) device().fill_zero(data(), nbytes());
}

void Tensor::copy_from(const Tensor& src) {
  if (src.dtype() != dtype_ || src.numel() != numel()) {
    throw std::invalid_argument(std::string("Tensor::copy_from: ") + dtype_name(src.dtype()) +
                                shape_string(src.shape()) + " into " + dtype_name(dtype_) + shape_string(shape_));
  }
  if (nbytes() > 0) device().copy(data(), src.data(), nbytes());
}

std::vector<float> Tensor::to_host_f32() const {
  std::vector<char> raw(nbytes());
  if (!raw.empty()) device().copy_to_host(raw.data(), data(), raw.size());
  std::vector<float> out(static_cast<std::size_t>(numel()));
  if (dtype_ == DType::kI32) {
    const auto* ints = reinterpret_cast<const std::int32_t*>(raw.data());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(ints[i]);
  } else {
    convert_host(raw.data(), dtype_, out.data(), DType::kF32, out.size());
  }
  return out;
}

std::vector<std::int32_t> Tensor::to_host_i32() const {
  if (dtype_ != DType::kI32) throw std::invalid_argument("Tensor::to_host_i32 on a non-i32 tensor");
  std::vector<std::int32_t> out(static_cast<std::size_t>(numel()));
  if (!out.empty()) device().copy_to_host(out.data(), data(), nbytes());
  return out;
}

void Tensor::copy_from_host_f32(std::span<const float> values) {
  if (static_cast<std::int64_t>(values.size()) != numel()) {
    throw std::invalid_argument("Tensor::copy_from_host_f32: " + std::to_string(values.size()) + " values for shape " +
                                shape_string(shape_));
  }
  if (dtype_ == DType::kF32) {
    if (!values.empty()) device().copy_from_host(data(), values.data(), nbytes());
    return;
  }
  std::vector<char> raw(nbytes());
  convert_host(values.data(), DType::kF32, raw.data(), dtype_, values.size());
  if (!raw.empty()) device().copy_from_host(data(), raw.data(), raw.size());
}

void Tensor::copy_from_host_bytes(const void* host) {
  if (nbytes() > 0) device().copy_from_host(data(), host, nbytes());
}

void Tensor::copy_to_host_bytes(void* host) const {
  if (nbytes() > 0) device().copy_to_host(host, data(), nbytes());
}

}  // namespace tessera
