// DistributedContext: the world communicator plus its node and cross-node splits.
#include "tessera/launch/distributed_context.hpp"

#include <stdexcept>

#include "tessera/launch/node_groups.hpp"

namespace tessera {

DistributedContext::DistributedContext(std::unique_ptr<Communicator> world, RankInfo info, CommOptions options,
                                       int argc, char** argv)
    : info_(std::move(info)), options_(std::move(options)), world_(std::move(world)), argc_(argc), argv_(argv) {
  if (!world_) throw std::invalid_argument("DistributedContext: the world communicator is null");
  node_ = split_by_node(*world_, info_);
  cross_node_ = split_across_nodes(*world_, info_);
}

}  // namespace tessera
