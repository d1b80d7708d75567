// The tensor-parallel mesh (world split into tensor- and data-parallel groups) and the model's
// tensor-parallel collectives on a Communicator.
#include "tessera/sharding/tensor_parallel_mesh.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/setting_error.hpp"

namespace tessera {
namespace {

void check_tensor(const Tensor& t, std::size_t count, const char* what) {
  if (static_cast<std::size_t>(t.numel()) != count) {
    throw std::invalid_argument(std::string("tensor-parallel ") + what + ": " + std::to_string(t.numel()) +
                                " elements where " + std::to_string(count) + " were expected");
  }
}

// Refuses a group of world ranks [first, first + tp) that spans nodes.
void check_inside_node(const NodeLayout& nodes, int first, int tp) {
  if (nodes.node_of_rank.empty()) return;
  std::set<int> spanned;
  for (int r = first; r < first + tp; ++r) spanned.insert(nodes.node_of_rank[static_cast<std::size_t>(r)]);
  if (spanned.size() <= 1) return;
  std::string hosts;
  for (int n : spanned) hosts += (hosts.empty() ? "" : ", ") + nodes.node_name(n);
  std::vector<int> ranks;
  for (int r = first; r < first + tp; ++r) ranks.push_back(r);
  throw SettingError("parallel.tp", std::to_string(tp),
                     "puts ranks " + rank_list(ranks) + " in one tensor-parallel group, but they run on " + hosts +
                         "; tensor parallelism communicates inside every layer, so its groups belong inside a "
                         "node: place consecutive ranks on one node (mpirun --map-by slot), choose a smaller "
                         "tensor-parallel size, or allow groups across nodes");
}

}  // namespace

TensorParallelMesh make_tensor_parallel_mesh(Communicator& world, int tp, const NodeLayout& nodes, bool across_nodes) {
  if (tp < 1 || world.size() % tp != 0) {
    throw SettingError("parallel.tp", std::to_string(tp),
                       "must divide the job's " + std::to_string(world.size()) +
                           " ranks into tensor-parallel groups; choose a divisor of " + std::to_string(world.size()));
  }
  if (!across_nodes) {
    for (int first = 0; first < world.size(); first += tp) check_inside_node(nodes, first, tp);
  }
  TensorParallelMesh mesh;
  mesh.tp = tp;
  const int r = world.rank();
  mesh.tensor = world.split(r / tp, r % tp);
  mesh.data = world.split(r % tp, r / tp);
  return mesh;
}

NodeLayout data_parallel_nodes(const NodeLayout& world_nodes, int tp, int tp_rank) {
  if (world_nodes.node_of_rank.empty() || tp <= 1) return world_nodes;
  NodeLayout out;
  out.hosts = world_nodes.hosts;
  for (int r = tp_rank; r < world_nodes.num_ranks(); r += tp) {
    out.node_of_rank.push_back(world_nodes.node_of_rank[static_cast<std::size_t>(r)]);
  }
  return out;
}

void CommTensorParallelGroup::all_reduce_sum(Tensor& x) {
  comm_.all_reduce(Span(x.data(), static_cast<std::size_t>(x.numel())), x.dtype(), ReduceOp::kSum).wait();
}

void CommTensorParallelGroup::all_gather(const Tensor& in, Tensor& out) {
  check_tensor(out, static_cast<std::size_t>(in.numel()) * static_cast<std::size_t>(size()), "all-gather output");
  comm_
      .all_gather(ConstSpan(in.data(), static_cast<std::size_t>(in.numel())),
                  Span(out.data(), static_cast<std::size_t>(out.numel())), in.dtype())
      .wait();
}

void CommTensorParallelGroup::reduce_scatter_sum(const Tensor& in, Tensor& out) {
  check_tensor(in, static_cast<std::size_t>(out.numel()) * static_cast<std::size_t>(size()), "reduce-scatter input");
  comm_
      .reduce_scatter(ConstSpan(in.data(), static_cast<std::size_t>(in.numel())),
                      Span(out.data(), static_cast<std::size_t>(out.numel())), in.dtype(), ReduceOp::kSum)
      .wait();
}

}  // namespace tessera
