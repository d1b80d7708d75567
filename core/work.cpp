// wait_all: waits for every Work handle of a batch, then rethrows the first error among them;
// then: two operations in sequence behind one handle.
#include "tessera/core/work.hpp"

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

namespace {

class ThenWork final : public detail::WorkState {
 public:
  ThenWork(Work first, std::function<Work()> next) : first_(std::move(first)), next_(std::move(next)) {}
  void wait() override {
    if (next_) {
      first_.wait();
      second_ = next_();
      next_ = nullptr;
    }
    second_.wait();
  }
  bool is_completed() override { return !next_ && second_.is_completed(); }

 private:
  Work first_, second_;
  std::function<Work()> next_;
};

}  // namespace

Work then(Work first, std::function<Work()> next) {
  return Work(std::make_shared<ThenWork>(std::move(first), std::move(next)));
}

}  // namespace tessera
