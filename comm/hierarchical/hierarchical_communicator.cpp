// HierarchicalCommunicator: two-level collectives run in issue order on one thread of their own,
// each step a collective of the node or cross-node communicator.
#include "tessera/comm/hierarchical/hierarchical_communicator.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tessera/core/completion_work.hpp"
#include "tessera/core/serial_executor.hpp"

namespace tessera {
namespace {

CommOptions hierarchical_options(const Communicator& world) {
  CommOptions options;
  options.name = world.name() + "/hierarchical";
  options.check = world.collective_check();
  return options;
}

std::size_t bytes_of(std::size_t count, DType dtype) { return count * dtype_size(dtype); }

}  // namespace

HierarchicalCommunicator::HierarchicalCommunicator(Communicator& world, const NodeLayout& nodes)
    : CommunicatorBase(hierarchical_options(world)) {
  if (world.memory_space() != MemorySpace::kHost) {
    throw std::invalid_argument("HierarchicalCommunicator: '" + world.name() + "' does not work on host memory");
  }
  if (nodes.num_ranks() != world.size()) {
    throw std::invalid_argument("HierarchicalCommunicator: a node layout of " + std::to_string(nodes.num_ranks()) +
                                " ranks for a world of " + std::to_string(world.size()));
  }
  if (!nodes.ranks_per_node()) {
    throw std::invalid_argument("HierarchicalCommunicator: the nodes hold different numbers of ranks (" +
                                nodes.describe() + ")");
  }
  by_node_ = nodes.ranks_node_by_node();
  const int node = nodes.node_of_rank[static_cast<std::size_t>(world.rank())];
  const std::vector<int> mates = nodes.ranks_of(node);
  const int local = static_cast<int>(std::find(mates.begin(), mates.end(), world.rank()) - mates.begin());
  node_ = world.split(node, local);
  cross_ = world.split(local, node);
  flat_ = world.split(0, world.rank());
  set_group(world.rank(), world.size());
  executor_ = std::make_unique<detail::SerialExecutor>();
}

HierarchicalCommunicator::~HierarchicalCommunicator() { executor_.reset(); }  // before the communicators it uses

Work HierarchicalCommunicator::post(std::function<void()> steps) {
  throw_if_failed();
  auto work = std::make_shared<detail::CompletionWork>();
  executor_->post(
      [this, work, steps = std::move(steps)] {
        try {
          steps();
          work->complete();
        } catch (const std::exception& e) {
          record_failure(e.what());
          work->fail(std::current_exception());
        }
      },
      [work] {
        work->fail(std::make_exception_ptr(std::runtime_error("collective cancelled: communicator destroyed")));
      });
  return Work(work);
}

void HierarchicalCommunicator::all_reduce_steps(Span buf, DType dtype, ReduceOp op, const DType* wire) {
  const std::size_t L = static_cast<std::size_t>(node_->size());
  if (buf.count % L != 0 || L == 1 || cross_->size() == 1) {  // no even shards, or one level only
    (wire ? flat_->all_reduce_f32(buf, *wire, op) : flat_->all_reduce(buf, dtype, op)).wait();
    return;
  }
  const std::size_t shard = buf.count / L;
  Span mine(static_cast<std::byte*>(buf.data) + bytes_of(shard * static_cast<std::size_t>(node_->rank()), dtype),
            shard);
  (wire ? node_->reduce_scatter_f32(buf, mine, *wire, op) : node_->reduce_scatter(buf, mine, dtype, op)).wait();
  (wire ? cross_->all_reduce_f32(mine, *wire, op) : cross_->all_reduce(mine, dtype, op)).wait();
  node_->all_gather(mine, buf, dtype).wait();
}

void HierarchicalCommunicator::reduce_scatter_steps(ConstSpan in, Span out, DType dtype, ReduceOp op,
                                                    const DType* wire) {
  const int L = node_->size(), M = cross_->size();
  const std::size_t piece = bytes_of(out.count, dtype);
  // Regroup by local rank: piece (l, n) is the chunk of the rank with local rank l on node n.
  std::vector<std::byte> grouped(piece * static_cast<std::size_t>(L * M));
  const auto* source = static_cast<const std::byte*>(in.data);
  for (int l = 0; l < L; ++l) {
    for (int n = 0; n < M; ++n) {
      std::memcpy(grouped.data() + piece * static_cast<std::size_t>(l * M + n),
                  source + piece * static_cast<std::size_t>(rank_at(n, l)), piece);
    }
  }
  std::vector<std::byte> partial(piece * static_cast<std::size_t>(M));
  const ConstSpan all(grouped.data(), out.count * static_cast<std::size_t>(L * M));
  const Span node_sum(partial.data(), out.count * static_cast<std::size_t>(M));
  (wire ? node_->reduce_scatter_f32(all, node_sum, *wire, op) : node_->reduce_scatter(all, node_sum, dtype, op)).wait();
  (wire ? cross_->reduce_scatter_f32(node_sum, out, *wire, op) : cross_->reduce_scatter(node_sum, out, dtype, op))
      .wait();
}

Work HierarchicalCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  check_all_reduce_args(group_shape(), buf, dtype, op);
  return post([=, this] { all_reduce_steps(buf, dtype, op, nullptr); });
}

Work HierarchicalCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  check_all_reduce_f32_args(group_shape(), buf, wire, op);
  return post([=, this] { all_reduce_steps(buf, DType::kF32, op, &wire); });
}

Work HierarchicalCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  check_reduce_scatter_args(group_shape(), in, out, dtype, op);
  return post([=, this] { reduce_scatter_steps(in, out, dtype, op, nullptr); });
}

Work HierarchicalCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  check_reduce_scatter_f32_args(group_shape(), in, out, wire, op);
  return post([=, this] { reduce_scatter_steps(in, out, DType::kF32, op, &wire); });
}

Work HierarchicalCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  check_all_gather_args(group_shape(), in, out, dtype);
  return post([=, this] {
    const int L = node_->size(), M = cross_->size();
    const std::size_t piece = bytes_of(in.count, dtype);
    std::vector<std::byte> across(piece * static_cast<std::size_t>(M));
    std::vector<std::byte> grouped(piece * static_cast<std::size_t>(L * M));
    cross_->all_gather(in, Span(across.data(), in.count * static_cast<std::size_t>(M)), dtype).wait();
    node_
        ->all_gather(ConstSpan(across.data(), in.count * static_cast<std::size_t>(M)),
                     Span(grouped.data(), in.count * static_cast<std::size_t>(L * M)), dtype)
        .wait();
    auto* target = static_cast<std::byte*>(out.data);
    for (int l = 0; l < L; ++l) {
      for (int n = 0; n < M; ++n) {
        std::memcpy(target + piece * static_cast<std::size_t>(rank_at(n, l)),
                    grouped.data() + piece * static_cast<std::size_t>(l * M + n), piece);
      }
    }
  });
}

Work HierarchicalCommunicator::broadcast(Span buf, DType dtype, int root) {
  return post([=, this] { flat_->broadcast(buf, dtype, root).wait(); });
}

Work HierarchicalCommunicator::barrier() {
  return post([this] { flat_->barrier().wait(); });
}

std::unique_ptr<Communicator> HierarchicalCommunicator::split(int color, int key) {
  std::unique_ptr<Communicator> part;  // on the executor: world's calls stay on one thread, in order
  post([&] { part = flat_->split(color, key); }).wait();
  return part;
}

}  // namespace tessera
