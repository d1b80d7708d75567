// Host collectives: bytes padded to i32 words, then one all_gather or broadcast on them.
#include "tessera/comm/host_collectives.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace tessera {
namespace detail {
namespace {

constexpr std::size_t kWord = sizeof(std::int32_t);

std::size_t words_for(std::size_t bytes) { return (bytes + kWord - 1) / kWord; }

}  // namespace

void require_host_communicator(const Communicator& comm, const char* function) {
  if (comm.memory_space() != MemorySpace::kGpu) return;
  throw std::invalid_argument(std::string(function) + " on communicator '" + comm.name() + "' (" +
                              comm_backend_name(comm.backend()) +
                              "): host collectives exchange host values, but this communicator works "
                              "on GPU memory; pass a host-memory communicator (the MPI world)");
}

void all_gather_slots(Communicator& comm, std::byte* all, std::size_t bytes) {
  if (bytes == 0) return;
  const std::size_t words = words_for(bytes);
  const auto ranks = static_cast<std::size_t>(comm.size());
  // Every slot starts from the caller's bytes, so slots the communicator does not write (loopback)
  // keep them.
  std::vector<std::int32_t> table(words * ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r) std::memcpy(table.data() + r * words, all + r * bytes, bytes);
  std::int32_t* mine = table.data() + static_cast<std::size_t>(comm.rank()) * words;
  comm.all_gather(ConstSpan(mine, words), Span(table.data(), table.size()), DType::kI32).wait();  // in place
  for (std::size_t r = 0; r < ranks; ++r) std::memcpy(all + r * bytes, table.data() + r * words, bytes);
}

void broadcast_bytes(Communicator& comm, std::byte* data, std::size_t bytes, int root) {
  if (bytes == 0) return;
  std::vector<std::int32_t> words(words_for(bytes), 0);
  std::memcpy(words.data(), data, bytes);
  comm.broadcast(Span(words.data(), words.size()), DType::kI32, root).wait();
  std::memcpy(data, words.data(), bytes);
}

}  // namespace detail

std::string broadcast_string(Communicator& comm, const std::string& text, int root) {
  detail::require_host_communicator(comm, "broadcast_string");
  const auto length = broadcast_value<std::uint64_t>(comm, text.size(), root);
  if (length == 0) return {};
  std::string result(static_cast<std::size_t>(length), '\0');
  if (comm.rank() == root) result = text;
  detail::broadcast_bytes(comm, reinterpret_cast<std::byte*>(result.data()), result.size(), root);
  return result;
}

std::vector<std::string> all_gather_strings(Communicator& comm, const std::string& text) {
  detail::require_host_communicator(comm, "all_gather_strings");
  const std::vector<std::uint64_t> lengths = all_gather_values<std::uint64_t>(comm, text.size());
  const std::size_t width = static_cast<std::size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<std::string> texts(lengths.size());
  if (width == 0) return texts;
  std::string padded = text;
  padded.resize(width, '\0');
  const std::vector<char> all = all_gather_values<char>(comm, std::span<const char>(padded.data(), width));
  for (std::size_t r = 0; r < texts.size(); ++r) texts[r].assign(all.data() + r * width, lengths[r]);
  return texts;
}

double sum_in_rank_order(Communicator& comm, double local) {
  detail::require_host_communicator(comm, "sum_in_rank_order");
  double total = 0.0;
  for (const double x : all_gather_values(comm, local)) total += x;
  return total;
}

}  // namespace tessera
