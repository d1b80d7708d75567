// HierarchicalCommunicator: collectives over a world whose ranks sit on several nodes, done in two
// levels so that less crosses the node links (slower than the links inside a node):
//   all_reduce      = reduce-scatter inside the node, all-reduce across nodes on the 1/L shards,
//                     all-gather inside the node;
//   reduce_scatter  = reduce-scatter inside the node on the input regrouped by local rank, then
//                     reduce-scatter across nodes;
//   all_gather      = all-gather across nodes, then inside the node, regrouped to rank order;
// (L ranks per node, M nodes). Per node, the bytes sent over its link per all_reduce of S bytes
// are 2 (M-1)/M S, against 2 L (N-L)/N S for the direct algorithm over all N ranks.
//
// Any placement works (--map-by slot or node); every node must hold the same number of ranks.
// Results are deterministic, but each element is summed inside the node first (in local-rank
// order), then across nodes (in node order): not the left-to-right rank order of a flat
// communicator, so the bits may differ from it. broadcast, barrier and split are the world's.
// Host memory only (the node-level steps regroup through host scratch). Collectives run in issue
// order on a thread of the communicator's own, over communicators split from `world` (which stays
// free for the caller's own collectives).
#pragma once

#include <memory>

#include "tessera/comm/communicator_base.hpp"
#include "tessera/comm/node_layout.hpp"

namespace tessera {

namespace detail {
class SerialExecutor;
}

class HierarchicalCommunicator final : public CommunicatorBase {
 public:
  // Collective over `world` (splits it twice). `nodes`: where world's ranks run. Throws
  // std::invalid_argument when the layout does not match the world, nodes hold different numbers
  // of ranks, or `world` does not work on host memory.
  HierarchicalCommunicator(Communicator& world, const NodeLayout& nodes);
  ~HierarchicalCommunicator() override;

  CommBackend backend() const override { return flat_->backend(); }
  MemorySpace memory_space() const override { return flat_->memory_space(); }

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override;
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override;
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override;
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override;
  Work all_gather(ConstSpan in, Span out, DType dtype) override;
  Work broadcast(Span buf, DType dtype, int root) override;
  Work barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  int ranks_per_node() const { return node_->size(); }
  int num_nodes() const { return cross_->size(); }

 private:
  Work post(std::function<void()> steps);
  // World rank of local rank `local` on node `node`.
  int rank_at(int node, int local) const { return by_node_[static_cast<std::size_t>(node * node_->size() + local)]; }
  void reduce_scatter_steps(ConstSpan in, Span out, DType dtype, ReduceOp op, const DType* wire);
  void all_reduce_steps(Span buf, DType dtype, ReduceOp op, const DType* wire);

  std::unique_ptr<Communicator> flat_;   // all ranks, world's order: broadcast, barrier, split, fallback
  std::unique_ptr<Communicator> node_;   // this node's ranks, by local rank
  std::unique_ptr<Communicator> cross_;  // this local rank on every node, by node
  std::vector<int> by_node_;             // world ranks, node by node, by local rank
  std::unique_ptr<detail::SerialExecutor> executor_;
};

}  // namespace tessera
