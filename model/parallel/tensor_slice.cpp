// TensorSlice arithmetic: piece sizes, local and global shapes, and the runs of local elements that
// are consecutive in the global tensor.
#include "tessera/model/parallel/tensor_slice.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace tessera {

std::int64_t piece_size(std::int64_t size, int parts, int index) {
  return size / parts + (index < size % parts ? 1 : 0);
}

std::int64_t piece_start(std::int64_t size, int parts, int index) {
  return index * (size / parts) + std::min<std::int64_t>(index, size % parts);
}

TensorSlice slice_of(int dim, std::vector<std::int64_t> segments, int parts, int index) {
  if (parts < 1 || index < 0 || index >= parts) {
    throw std::invalid_argument("slice_of: part " + std::to_string(index) + " of " + std::to_string(parts));
  }
  return TensorSlice{dim, parts, index, std::move(segments)};
}

std::int64_t local_extent(const TensorSlice& slice) {
  std::int64_t extent = 0;
  for (std::int64_t s : slice.segments) extent += piece_size(s, slice.parts, slice.index);
  return extent;
}

namespace {

std::int64_t global_extent(const TensorSlice& slice) {
  return std::accumulate(slice.segments.begin(), slice.segments.end(), std::int64_t{0});
}

void check_dim(const Shape& shape, const TensorSlice& slice) {
  if (slice.dim < 0 || slice.dim >= static_cast<int>(shape.size())) {
    throw std::invalid_argument("tensor slice: " + describe(slice) + " of a tensor of " + std::to_string(shape.size()) +
                                " dimension(s)");
  }
}

}  // namespace

Shape local_shape(const Shape& global, const TensorSlice& slice) {
  if (!slice.split()) return global;
  check_dim(global, slice);
  if (global_extent(slice) != global[static_cast<std::size_t>(slice.dim)]) {
    throw std::invalid_argument("tensor slice: " + describe(slice) + " does not add up to the tensor's " +
                                std::to_string(global[static_cast<std::size_t>(slice.dim)]));
  }
  Shape local = global;
  local[static_cast<std::size_t>(slice.dim)] = local_extent(slice);
  return local;
}

Shape global_shape(const Shape& local, const TensorSlice& slice) {
  if (!slice.split()) return local;
  check_dim(local, slice);
  Shape global = local;
  global[static_cast<std::size_t>(slice.dim)] = global_extent(slice);
  return global;
}

void for_each_global_run(const Shape& local, const TensorSlice& slice, std::int64_t first, std::int64_t count,
                         const std::function<void(std::int64_t, std::int64_t, std::int64_t)>& run) {
  if (count <= 0) return;
  if (!slice.split()) {
    run(first, first, count);
    return;
  }
  check_dim(local, slice);
  const auto d = static_cast<std::size_t>(slice.dim);
  std::int64_t inner = 1;
  for (std::size_t k = d + 1; k < local.size(); ++k) inner *= local[k];
  const std::int64_t local_dim = local[d], global_dim = global_extent(slice);
  const std::int64_t outer_block = local_dim * inner;  // local elements per step of the dimensions before `dim`
  if (outer_block == 0) return;
  const std::int64_t end = first + count;
  for (std::int64_t o = first / outer_block; o <= (end - 1) / outer_block; ++o) {
    std::int64_t local_row = 0, global_row = 0;
    for (std::int64_t segment : slice.segments) {
      const std::int64_t size = piece_size(segment, slice.parts, slice.index);
      const std::int64_t lo = (o * local_dim + local_row) * inner, hi = lo + size * inner;
      const std::int64_t a = std::max(lo, first), b = std::min(hi, end);
      if (a < b) {
        const std::int64_t global_lo =
            (o * global_dim + global_row + piece_start(segment, slice.parts, slice.index)) * inner;
        run(global_lo + (a - lo), a, b - a);
      }
      local_row += size;
      global_row += segment;
    }
  }
}

std::string describe(const TensorSlice& slice) {
  std::string s = "dim " + std::to_string(slice.dim) + " of [";
  for (std::size_t i = 0; i < slice.segments.size(); ++i) s += (i ? ", " : "") + std::to_string(slice.segments[i]);
  return s + "] in " + std::to_string(slice.parts) + " parts, part " + std::to_string(slice.index);
}

}  // namespace tessera
