// DistributedContext: what a Tessera program gets from run_distributed — who it is (RankInfo) and
// the communicators over all ranks, over the ranks of its node and across nodes. Owns them; they
// are destroyed (before MPI is finalised) when the context is.
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"
#include "tessera/launch/rank_info.hpp"

namespace tessera {

class DistributedContext {
 public:
  // Collective over `world`: builds the node and cross-node groups by splitting it.
  DistributedContext(std::unique_ptr<Communicator> world, RankInfo info, CommOptions options, int argc, char** argv);

  const RankInfo& rank_info() const { return info_; }
  int rank() const { return info_.rank; }
  int world_size() const { return info_.world_size; }

  Communicator& world() { return *world_; }            // every rank (host memory, MPI)
  Communicator& node() { return *node_; }              // the ranks on this node
  Communicator& cross_node() { return *cross_node_; }  // this local rank on every node

  // The settings the communicators were built with (environment applied); pass them on to
  // communicators made later, e.g. make_nccl_communicator(ctx.world(), gpu, ctx.comm_options()).
  const CommOptions& comm_options() const { return options_; }

  // The command line with MPI's own arguments removed.
  int argc() const { return argc_; }
  char** argv() const { return argv_; }

 private:
  RankInfo info_;
  CommOptions options_;
  std::unique_ptr<Communicator> world_;
  std::unique_ptr<Communicator> node_;
  std::unique_ptr<Communicator> cross_node_;
  int argc_;
  char** argv_;
};

}  // namespace tessera
