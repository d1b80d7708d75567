// failed_event: a completed event carrying a failure.
#include "tessera/runtime/event.hpp"

#include "tessera/core/completion_work.hpp"

namespace tessera {

Event failed_event(std::exception_ptr error) {
  auto state = std::make_shared<detail::CompletionWork>();
  state->fail(std::move(error));
  return Event(std::move(state));
}

}  // namespace tessera
