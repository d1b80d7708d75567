// CommunicatorBase: what every communicator backend keeps the same way, so backends implement only
// their collectives — the options (name, collective check), rank and size, the call sequence
// number, and the first failure after which the communicator refuses further collectives.
// Backends call set_group() once they know their rank and size, number each collective with
// next_sequence(), and report errors while running with record_failure().
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "tessera/comm/collective_args.hpp"
#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/comm_options.hpp"
#include "tessera/comm/communicator.hpp"

namespace tessera {

class CommunicatorBase : public Communicator {
 public:
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::string& name() const override { return options_.name; }

  void set_collective_check(CollectiveCheck check) override { check_.store(check); }
  CollectiveCheck collective_check() const override { return check_.load(); }

 protected:
  explicit CommunicatorBase(CommOptions options);

  // Called once by the backend, before any collective, when it knows its place in the group.
  void set_group(int rank, int size);

  const CommOptions& options() const { return options_; }
  // The options of split(color, key)'s communicator: this one's, named "<name>/<color>", with the
  // collective check as it is now.
  CommOptions child_options(int color) const;
  // What collective_args.hpp checks against.
  detail::GroupShape group_shape() const { return {options_.name, rank_, size_, memory_space()}; }

  // 1 for the first collective, then 2, 3, ... Caller's thread only.
  std::uint64_t next_sequence() { return ++sequence_; }

  // Keeps the first error (later ones are dropped); thread-safe.
  void record_failure(const std::string& what);
  bool has_failed() const { return failed_.load(); }
  // Throws std::runtime_error once a failure was recorded: the ranks can no longer agree on the
  // communicator's state.
  void throw_if_failed() const;

  // Throws std::invalid_argument for a color that is neither >= 0 nor kNoGroup.
  void check_split_color(int color) const;

  // "#5 all_reduce(count=8, f32, sum) on communicator 'world' (rank 1/4 there)"
  std::string describe_here(const CollectiveCall& call) const;

 private:
  CommOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<CollectiveCheck> check_;
  std::uint64_t sequence_ = 0;

  mutable std::mutex failure_mutex_;
  std::atomic<bool> failed_{false};
  std::string failure_;  // the first error
};

}  // namespace tessera
