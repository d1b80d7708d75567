// The device mesh of a tensor-parallel job: the world's ranks as a grid of `tp` consecutive ranks
// per tensor-parallel group (world ranks [g tp, (g+1) tp) form group g, so a group sits inside a
// node under the default by-slot placement) by world size / tp data-parallel ranks. A rank's
// data-parallel group is the ranks at its own position in every tensor-parallel group: they hold
// the same pieces of the model and shard them with ZeRO (and hybrid sharding) as a job without
// tensor parallelism shards the whole model over the world. Global batch = micro × data-parallel
// ranks × accumulation: the ranks of a tensor-parallel group read the same samples.
//
// CommTensorParallelGroup: the model's TensorParallelGroup (model/parallel/tensor_parallel.hpp) on
// the tensor-parallel Communicator — the same communication stack as the gradients, on the device's
// memory (MPI on the CPU, NCCL or staged MPI on a GPU), each collective waited for before the
// module goes on.
#pragma once

#include <memory>

#include "tessera/comm/communicator.hpp"
#include "tessera/comm/node_layout.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

struct TensorParallelMesh {
  int tp = 1;                            // ranks per tensor-parallel group
  std::unique_ptr<Communicator> tensor;  // this rank's tensor-parallel group
  std::unique_ptr<Communicator> data;    // this rank's data-parallel group
};

// Collective over `world` (every rank calls it at the same point). Throws SettingError
// ("parallel.tp") when tp < 1 or does not divide the world's size, and — unless `across_nodes` —
// when a group would take ranks of more than one node, naming the group's ranks and their hosts.
TensorParallelMesh make_tensor_parallel_mesh(Communicator& world, int tp, const NodeLayout& nodes,
                                             bool across_nodes = false);

// Where the ranks of tensor-parallel rank `tp_rank`'s data-parallel group run: data-parallel rank d
// is world rank d tp + tp_rank. Hybrid sharding and node-aware groups over the data-parallel group
// read it (`--hybrid-group node`: the data-parallel ranks of one node). Empty `world_nodes`: one node.
NodeLayout data_parallel_nodes(const NodeLayout& world_nodes, int tp, int tp_rank);

class CommTensorParallelGroup final : public TensorParallelGroup {
 public:
  // `comm` must outlive the group and work on the memory of the tensors passed in.
  explicit CommTensorParallelGroup(Communicator& comm) : comm_(comm) {}

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void all_reduce_sum(Tensor& x) override;
  void all_gather(const Tensor& in, Tensor& out) override;
  void reduce_scatter_sum(const Tensor& in, Tensor& out) override;

 private:
  Communicator& comm_;
};

}  // namespace tessera
