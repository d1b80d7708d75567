// CommunicatorBase: options, group shape, sequence numbers and the first-failure record.
#include "tessera/comm/communicator_base.hpp"

#include <stdexcept>
#include <utility>

namespace tessera {

CommunicatorBase::CommunicatorBase(CommOptions options) : options_(std::move(options)), check_(options_.check) {}

void CommunicatorBase::set_group(int rank, int size) {
  rank_ = rank;
  size_ = size;
}

CommOptions CommunicatorBase::child_options(int color) const {
  CommOptions child = options_;
  child.name = options_.name + "/" + std::to_string(color);
  child.check = check_.load();
  return child;
}

void CommunicatorBase::record_failure(const std::string& what) {
  std::lock_guard lock(failure_mutex_);
  if (failed_.load()) return;
  failure_ = what;
  failed_.store(true);
}

void CommunicatorBase::throw_if_failed() const {
  if (!failed_.load()) return;
  std::lock_guard lock(failure_mutex_);
  throw std::runtime_error("communicator '" + options_.name + "' refuses further collectives after an earlier error (" +
                           failure_ +
                           "); ranks can no longer agree on its state, so create a new one or end "
                           "the job");
}

void CommunicatorBase::check_split_color(int color) const {
  if (color >= 0 || color == kNoGroup) return;
  throw std::invalid_argument("split on communicator '" + options_.name + "': color " + std::to_string(color) +
                              " is negative; pass a color >= 0, or "
                              "kNoGroup to join no group");
}

std::string CommunicatorBase::describe_here(const CollectiveCall& call) const {
  return describe(call) + " on communicator '" + options_.name + "' (rank " + std::to_string(rank_) + "/" +
         std::to_string(size_) + " there)";
}

}  // namespace tessera
