// LoopbackCommunicator: the shared argument checks, then an already completed Work.
#include "tessera/comm/loopback/loopback_communicator.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "tessera/comm/collective_args.hpp"

namespace tessera {

LoopbackCommunicator::LoopbackCommunicator(int rank, int size, CommOptions options)
    : CommunicatorBase(std::move(options)) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw std::invalid_argument("loopback communicator '" + name() + "': rank " + std::to_string(rank) + " of " +
                                std::to_string(size) + " ranks; pass size >= 1 and a rank in [0, size)");
  }
  set_group(rank, size);
}

Work LoopbackCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  detail::check_all_reduce_args(group_shape(), buf, dtype, op);
  return Work();
}

Work LoopbackCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  detail::check_reduce_scatter_args(group_shape(), in, out, dtype, op);
  return Work();
}

Work LoopbackCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  detail::check_all_reduce_f32_args(group_shape(), buf, wire, op);
  return Work();
}

Work LoopbackCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  detail::check_reduce_scatter_f32_args(group_shape(), in, out, wire, op);
  return Work();
}

Work LoopbackCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  detail::check_all_gather_args(group_shape(), in, out, dtype);
  return Work();
}

Work LoopbackCommunicator::broadcast(Span buf, DType dtype, int root) {
  detail::check_broadcast_args(group_shape(), buf, dtype, root);
  return Work();
}

Work LoopbackCommunicator::barrier() { return Work(); }

std::unique_ptr<Communicator> LoopbackCommunicator::split(int /*color*/, int /*key*/) {
  throw std::logic_error("split on loopback communicator '" + name() +
                         "': a loopback communicator cannot split, because it does not know the "
                         "other ranks' colors; build each group as a LoopbackCommunicator directly "
                         "(its rank and size within the group)");
}

}  // namespace tessera
