// wait_all: waits for every Work handle of a batch, then rethrows the first error among them.
#include "core/work.hpp"

#include <exception>

namespace tessera {

void wait_all(std::span<const Work> works) {
  std::exception_ptr first_error;
  for (const Work& work : works) {
    try {
      work.wait();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace tessera
