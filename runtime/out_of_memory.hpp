// OutOfMemoryError: an allocation that failed, with what was being allocated, its size, where, and
// what is already in use — instead of a bare std::bad_alloc. It derives from std::bad_alloc, so
// code that catches allocation failures keeps working.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <utility>

namespace tessera {

class OutOfMemoryError : public std::bad_alloc {
 public:
  explicit OutOfMemoryError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// "cpu (8 threads): out of memory allocating 12.00 GiB (12884901888 bytes) of device memory for
// activations, with 1.20 GiB already allocated (peak 2.00 GiB). ..." — `what` names the buffer,
// `in_use`/`peak` are the tracker's totals of that memory kind.
std::string out_of_memory_message(const std::string& device, const std::string& memory_kind, const std::string& what,
                                  std::size_t bytes, std::int64_t in_use, std::int64_t peak);

}  // namespace tessera
