// PlacedTensor: a flat tensor of model state that lives where the Placement says — in one of the
// device's memory kinds (a Tensor) or in the NVMe store (a FileExtent) — with the operations the
// engine needs either way: a slot for a streamed pass, value-range copies to and from the host
// (initial values, checkpoints) and zeroing.
#pragma once

#include <cstdint>

#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/memory_category.hpp"
#include "tessera/runtime/memory_kind.hpp"
#include "tessera/runtime/offload/nvme_store.hpp"
#include "tessera/runtime/offload/window_stream.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class Device;

class PlacedTensor {
 public:
  PlacedTensor() = default;
  // `values` values of `dtype`, one per `elements_per_value` elements, zero: allocated in `kind`
  // of `device`, or reserved in `store` when kind is kNvme (store must then be given).
  PlacedTensor(Device& device, NvmeStore* store, std::int64_t values, DType dtype, std::int64_t elements_per_value,
               MemoryCategory category, MemoryKind kind);
  // A resident tensor (possibly a view of another buffer).
  static PlacedTensor resident(Tensor tensor, std::int64_t elements_per_value = 1);

  bool in_store() const { return filed_.defined(); }
  DType dtype() const { return dtype_; }
  std::int64_t values() const { return values_; }
  const Tensor& tensor() const { return tensor_; }  // undefined when in the store
  const FileExtent& extent() const { return filed_; }

  // This tensor in a pass over its elements.
  StreamSlot slot(bool load, bool save) const;
  // Values [first, first + count) to or from host memory.
  void read(std::int64_t first, std::int64_t count, void* host) const;
  void write(std::int64_t first, std::int64_t count, const void* host);
  void zero();

 private:
  DType dtype_ = DType::kF32;
  std::int64_t values_ = 0, elements_per_value_ = 1;
  Tensor tensor_;
  FileExtent filed_;
  NvmeStore* store_ = nullptr;
};

}  // namespace tessera
