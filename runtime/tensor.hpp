// Tensor: a typed, shaped view into a Storage on some Device (contiguous, row-major).
// Several tensors may view one storage: sharding views every parameter of a unit inside one flat
// buffer. Copying a Tensor copies the view, not the data. Data pointers are device pointers:
// read them on the host only through to_host()/from_host() or when device().kind() is kCpu. On the
// meta device (device().holds_data() false) every data pointer is null.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_category.hpp"
#include "tessera/runtime/memory_kind.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {

class Device;
class Stream;

using Shape = std::vector<std::int64_t>;

std::int64_t shape_numel(const Shape& shape);
std::string shape_string(const Shape& shape);  // "(4, 256, 384)"

class Tensor {
 public:
  Tensor() = default;  // undefined tensor

  // New storage of shape x dtype in `kind` memory of `device`, tagged `category`. Contents
  // uninitialised / zero.
  static Tensor empty(Device& device, Shape shape, DType dtype, MemoryCategory category,
                      MemoryKind kind = MemoryKind::kDevice);
  static Tensor zeros(Device& device, Shape shape, DType dtype, MemoryCategory category,
                      MemoryKind kind = MemoryKind::kDevice);
  // Copies host f32 values (converted to `dtype`) into a new tensor.
  static Tensor from_host(Device& device, std::span<const float> values, Shape shape, DType dtype,
                          MemoryCategory category);
  static Tensor from_host_i32(Device& device, std::span<const std::int32_t> values, Shape shape,
                              MemoryCategory category);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  std::int64_t dim(int i) const;  // negative i counts from the end
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  std::size_t byte_offset() const { return offset_; }
  Device& device() const;
  MemoryCategory category() const;
  MemoryKind memory_kind() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  void* data();
  const void* data() const;
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data());
  }
  template <typename T>
  const T* data_as() const {
    return static_cast<const T*>(data());
  }

  // A view of `shape` starting `element_offset` elements into this tensor (same dtype, same storage).
  Tensor view(std::int64_t element_offset, Shape shape) const;
  // The same elements under another shape of equal numel.
  Tensor reshape(Shape shape) const;
  // This tensor's first bytes read as `shape` of `dtype` (same storage; the bytes must fit): a buffer
  // reused for values of another type once its own have been consumed.
  Tensor reinterpret(DType dtype, Shape shape) const;

  // Work queued on `stream` uses this tensor's storage: its memory is not reused before that work
  // is done, even once every tensor viewing it is gone (Storage::record_stream).
  void record_stream(Stream& stream) const;

  void zero_();
  void copy_from(const Tensor& src);  // same dtype and numel, any device pair of the same device

  // Host copies for tests, checkpoints and logging. to_host_f32 converts bf16/f16 to f32.
  std::vector<float> to_host_f32() const;
  std::vector<std::int32_t> to_host_i32() const;
  void copy_from_host_f32(std::span<const float> values);  // converts to this tensor's dtype
  // nbytes() raw bytes of this tensor's dtype, from or to host memory (no conversion).
  void copy_from_host_bytes(const void* host);
  void copy_to_host_bytes(void* host) const;

 private:
  Tensor(std::shared_ptr<Storage> storage, std::size_t offset, Shape shape, DType dtype);

  std::shared_ptr<Storage> storage_;
  std::size_t offset_ = 0;  // bytes from the start of storage
  Shape shape_;
  DType dtype_ = DType::kF32;
};

}  // namespace tessera
