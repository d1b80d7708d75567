// TensorSlice: which part of a full ("global") parameter a tensor-parallel rank holds. The global
// tensor's dimension `dim` is made of consecutive segments (the q, k and v blocks of a fused qkv
// weight; the gate and up halves of SwiGLU's; one segment for a plain split), and each segment is
// cut into `parts` pieces: the rank of index `index` holds piece `index` of every segment, in
// segment order. A piece's size is the segment's divided by `parts`, the first (size % parts)
// pieces one larger (a vocabulary of 257 rows over 2 ranks: 129 and 128). A parameter that is not
// split (parts == 1) is replicated on every rank of the group.
//
// Everything a tensor-parallel parameter needs beyond its local shape comes from here: the global
// shape (checkpoints and exports name it), where each local element sits in the global tensor (its
// initial values are those of the global tensor's elements, so a tp 2 model starts where the
// one-process model starts).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct TensorSlice {
  int dim = 0;                         // the split dimension of the global tensor
  int parts = 1;                       // ranks sharing it; 1: not split
  int index = 0;                       // this rank's piece, 0 .. parts-1
  std::vector<std::int64_t> segments;  // global sizes along `dim`, summing to the global extent

  bool split() const { return parts > 1; }
};

// Piece `index` of `size` elements cut into `parts`: its size and its first element.
std::int64_t piece_size(std::int64_t size, int parts, int index);
std::int64_t piece_start(std::int64_t size, int parts, int index);

// The slice of a tensor whose dimension `dim` holds `segments`, each cut into `parts`, for `index`.
TensorSlice slice_of(int dim, std::vector<std::int64_t> segments, int parts, int index);

// The extent of dimension `dim` held locally: the sum of the segments' pieces.
std::int64_t local_extent(const TensorSlice& slice);

// The local shape: `global` with dimension slice.dim replaced by local_extent (`global` as is when
// not split). Throws std::invalid_argument when the segments do not add up to the global extent.
Shape local_shape(const Shape& global, const TensorSlice& slice);

// The global shape of a tensor held as `local` under `slice`.
Shape global_shape(const Shape& local, const TensorSlice& slice);

// Calls run(global_first, local_first, count) for each maximal run of local elements [first,
// first + count) of the row-major local tensor (`local` shape) that are consecutive in the row-major
// global tensor, in increasing order of both (the global positions of local elements only increase).
void for_each_global_run(const Shape& local, const TensorSlice& slice, std::int64_t first, std::int64_t count,
                         const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& run);

// "dim 0 of [768, 768, 768] in 2 parts, part 1": for messages.
std::string describe(const TensorSlice& slice);

}  // namespace tessera
