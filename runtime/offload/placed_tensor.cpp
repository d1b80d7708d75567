// PlacedTensor: resident or filed, and the copies either way.
#include "tessera/runtime/offload/placed_tensor.hpp"

#include <stdexcept>
#include <vector>

#include "tessera/runtime/device.hpp"

namespace tessera {

PlacedTensor::PlacedTensor(Device& device, NvmeStore* store, std::int64_t values, DType dtype,
                           std::int64_t elements_per_value, MemoryCategory category, MemoryKind kind)
    : dtype_(dtype), values_(values), elements_per_value_(elements_per_value) {
  if (kind != MemoryKind::kNvme) {
    tensor_ = Tensor::zeros(device, {values}, dtype, category, kind);
    return;
  }
  if (store == nullptr) throw std::logic_error("PlacedTensor: NVMe placement without an NVMe store");
  store_ = store;
  filed_ = store->reserve(values, dtype, elements_per_value, category);  // a fresh file reads as zeros
}

PlacedTensor PlacedTensor::resident(Tensor tensor, std::int64_t elements_per_value) {
  PlacedTensor t;
  t.dtype_ = tensor.dtype();
  t.values_ = tensor.numel();
  t.elements_per_value_ = elements_per_value;
  t.tensor_ = std::move(tensor);
  return t;
}

StreamSlot PlacedTensor::slot(bool load, bool save) const {
  StreamSlot s;
  Tensor handle = tensor_;  // a handle: its memory is writable whatever this object's constness
  s.resident = in_store() ? nullptr : static_cast<std::byte*>(handle.data());
  s.filed = in_store() ? &filed_ : nullptr;
  s.value_bytes = dtype_size(dtype_);
  s.elements_per_value = elements_per_value_;
  s.load = load;
  s.save = save;
  return s;
}

void PlacedTensor::read(std::int64_t first, std::int64_t count, void* host) const {
  if (in_store()) {
    store_->read(filed_, first, count, host);
    return;
  }
  const std::size_t vb = dtype_size(dtype_);
  tensor_.device().copy_to_host(host,
                                static_cast<const std::byte*>(tensor_.data()) + static_cast<std::size_t>(first) * vb,
                                static_cast<std::size_t>(count) * vb);
}

void PlacedTensor::write(std::int64_t first, std::int64_t count, const void* host) {
  if (in_store()) {
    store_->write(filed_, first, count, host);
    return;
  }
  const std::size_t vb = dtype_size(dtype_);
  tensor_.device().copy_from_host(static_cast<std::byte*>(tensor_.data()) + static_cast<std::size_t>(first) * vb, host,
                                  static_cast<std::size_t>(count) * vb);
}

void PlacedTensor::zero() {
  if (!in_store()) {
    if (tensor_.defined()) tensor_.zero_();
    return;
  }
  // One streamed block of zeros at a time.
  const std::int64_t step = filed_.values_per_chunk;
  const std::vector<std::byte> zeros(static_cast<std::size_t>(step) * dtype_size(dtype_));
  for (std::int64_t first = 0; first < values_; first += step) {
    store_->write(filed_, first, std::min(step, values_ - first), zeros.data());
  }
}

}  // namespace tessera
