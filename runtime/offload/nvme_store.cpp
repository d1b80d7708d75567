// NvmeStore: extents in the offload file and their transfers.
#include "tessera/runtime/offload/nvme_store.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tessera/runtime/device.hpp"
#include "tessera/runtime/offload/offload_file.hpp"

namespace tessera {
namespace {

std::int64_t round_up(std::int64_t bytes) {
  return (bytes + kDirectIoAlignment - 1) / kDirectIoAlignment * kDirectIoAlignment;
}

// Waits for the chunk reads of one extent, then closes the gaps between chunks (each chunk was
// read at its file stride; values follow each other in the result).
class ExtentReadWork final : public detail::WorkState {
 public:
  ExtentReadWork(NvmeStore& store, const FileExtent& extent, std::byte* buffer, std::vector<IoQueue::Ticket> tickets)
      : store_(store), extent_(extent), buffer_(buffer), tickets_(std::move(tickets)) {}
  void wait() override {
    if (done_) return;
    for (IoQueue::Ticket t : tickets_) store_.wait(t);
    const auto chunk_bytes = static_cast<std::size_t>(extent_.values_per_chunk) * extent_.value_bytes;
    const auto stride = static_cast<std::size_t>(extent_.chunk_stride);
    // In increasing order a chunk's destination never overlaps a later chunk's source.
    for (std::int64_t c = 1; c < extent_.chunks() && chunk_bytes != stride; ++c) {
      const auto i = static_cast<std::size_t>(c);
      std::memmove(buffer_ + i * chunk_bytes, buffer_ + i * stride,
                   static_cast<std::size_t>(extent_.chunk_values(c)) * extent_.value_bytes);
    }
    done_ = true;
  }
  bool is_completed() override { return done_; }

 private:
  NvmeStore& store_;
  FileExtent extent_;
  std::byte* buffer_;
  std::vector<IoQueue::Ticket> tickets_;
  bool done_ = false;
};

// Gives a buffer's memory back when the scope ends.
struct ReleaseOnExit {
  AlignedBuffer& buffer;
  ~ReleaseOnExit() { buffer.release(); }
};

}  // namespace

std::int64_t FileExtent::chunk_values(std::int64_t chunk) const {
  return std::min(values_per_chunk, values - chunk * values_per_chunk);
}

std::int64_t FileExtent::file_bytes() const {
  const std::int64_t n = chunks();
  return n == 0 ? 0 : (n - 1) * chunk_stride + static_cast<std::int64_t>(chunk_io_bytes(n - 1));
}

std::size_t FileExtent::chunk_io_bytes(std::int64_t chunk) const {
  return static_cast<std::size_t>(round_up(chunk_values(chunk) * static_cast<std::int64_t>(value_bytes)));
}

NvmeStore::NvmeStore(Device& device, const NvmeSettings& settings, int rank)
    : device_(device),
      settings_(settings),
      ring_(&device.memory(MemoryKind::kPinnedHost), MemoryCategory::kCommBuffers, device.holds_data()),
      bounce_(&device.memory(MemoryKind::kPinnedHost), MemoryCategory::kCommBuffers, device.holds_data()) {
  if (!device.holds_data()) return;
  const bool buffered = settings.io == OffloadIo::kBuffered;
  file_ = std::make_unique<OffloadFile>(settings.path, rank, !buffered);
  queue_ = make_io_queue(file_->fd(), file_->path().string(), settings.queue_depth, buffered, &queue_refusal_);
}

NvmeStore::~NvmeStore() {
  if (queue_) {
    try {
      queue_->wait_all();
    } catch (...) {
    }
  }
  for (MemoryCategory c : kAllMemoryCategories) {
    const auto bytes = booked_[static_cast<std::size_t>(c)];
    if (bytes > 0) device_.memory(MemoryKind::kNvme).on_free(c, static_cast<std::size_t>(bytes));
  }
}

FileExtent NvmeStore::reserve(std::int64_t values, DType dtype, std::int64_t elements_per_value,
                              MemoryCategory category) {
  if (settings_.block_elements % elements_per_value != 0) {
    throw std::invalid_argument("NvmeStore: a block of " + std::to_string(settings_.block_elements) +
                                " elements is not a whole number of values of " + std::to_string(elements_per_value));
  }
  FileExtent e;
  e.offset = next_offset_;
  e.values = values;
  e.value_bytes = dtype_size(dtype);
  e.values_per_chunk = settings_.block_elements / elements_per_value;
  e.chunk_stride = round_up(e.values_per_chunk * static_cast<std::int64_t>(e.value_bytes));
  next_offset_ += e.file_bytes();
  booked_[static_cast<std::size_t>(category)] += e.file_bytes();
  device_.memory(MemoryKind::kNvme).on_allocate(category, static_cast<std::size_t>(e.file_bytes()));
  return e;
}

void NvmeStore::allocate_file() {
  if (file_) file_->reserve(next_offset_);
}

IoQueue::Ticket NvmeStore::read_chunk(const FileExtent& extent, std::int64_t chunk, void* buffer) {
  if (!queue_) return 0;
  const std::size_t bytes = extent.chunk_io_bytes(chunk);
  stats_.bytes_read += static_cast<std::int64_t>(bytes);
  return queue_->submit({IoOp::kRead, buffer, bytes, extent.chunk_offset(chunk)});
}

IoQueue::Ticket NvmeStore::write_chunk(const FileExtent& extent, std::int64_t chunk, const void* buffer) {
  if (!queue_) return 0;
  const std::size_t bytes = extent.chunk_io_bytes(chunk);
  stats_.bytes_written += static_cast<std::int64_t>(bytes);
  return queue_->submit({IoOp::kWrite, const_cast<void*>(buffer), bytes, extent.chunk_offset(chunk)});
}

void NvmeStore::wait(IoQueue::Ticket ticket) {
  if (queue_) queue_->wait(ticket);
}

Work NvmeStore::read_all(const FileExtent& extent, void* buffer) {
  if (!queue_ || extent.values == 0) return Work();
  auto* base = static_cast<std::byte*>(buffer);
  const std::int64_t before = stats_.bytes_read;
  std::vector<IoQueue::Ticket> tickets;
  for (std::int64_t c = 0; c < extent.chunks(); ++c) {
    tickets.push_back(read_chunk(extent, c, base + static_cast<std::size_t>(c * extent.chunk_stride)));
  }
  stats_.bytes_read_whole += stats_.bytes_read - before;
  return Work(std::make_shared<ExtentReadWork>(*this, extent, base, std::move(tickets)));
}

void NvmeStore::write(const FileExtent& extent, std::int64_t first, std::int64_t count, const void* src) {
  if (!queue_ || count == 0) return;
  const auto vb = static_cast<std::int64_t>(extent.value_bytes);
  std::byte* bounce = bounce_.reserve(static_cast<std::size_t>(extent.chunk_stride));
  const ReleaseOnExit release{bounce_};  // only the step's ring stays allocated between calls
  for (std::int64_t c = first / extent.values_per_chunk; c < extent.chunks(); ++c) {
    const std::int64_t begin = c * extent.values_per_chunk, end = begin + extent.chunk_values(c);
    if (begin >= first + count) break;
    const std::int64_t lo = std::max(first, begin), hi = std::min(first + count, end);
    if (lo != begin || hi != end) wait(read_chunk(extent, c, bounce));  // patch a partial chunk
    std::memcpy(bounce + (lo - begin) * vb, static_cast<const std::byte*>(src) + (lo - first) * vb,
                static_cast<std::size_t>((hi - lo) * vb));
    wait(write_chunk(extent, c, bounce));
  }
}

void NvmeStore::read(const FileExtent& extent, std::int64_t first, std::int64_t count, void* dst) {
  if (!queue_ || count == 0) return;
  const auto vb = static_cast<std::int64_t>(extent.value_bytes);
  std::byte* bounce = bounce_.reserve(static_cast<std::size_t>(extent.chunk_stride));
  const ReleaseOnExit release{bounce_};  // only the step's ring stays allocated between calls
  for (std::int64_t c = first / extent.values_per_chunk; c < extent.chunks(); ++c) {
    const std::int64_t begin = c * extent.values_per_chunk, end = begin + extent.chunk_values(c);
    if (begin >= first + count) break;
    const std::int64_t lo = std::max(first, begin), hi = std::min(first + count, end);
    wait(read_chunk(extent, c, bounce));
    std::memcpy(static_cast<std::byte*>(dst) + (lo - first) * vb, bounce + (lo - begin) * vb,
                static_cast<std::size_t>((hi - lo) * vb));
  }
}

std::string NvmeStore::describe() const {
  if (!file_) return "no file (planning only)";
  return std::string(queue_->name()) + (file_->direct() ? ", O_DIRECT, " : ", buffered, ") + file_->path().string();
}

std::vector<std::string> NvmeStore::notices() const {
  std::vector<std::string> lines;
  if (!file_) return lines;
  if (file_->replaced_stale()) {
    lines.push_back("offload: replaced " + file_->path().string() +
                    " left by an earlier run (its contents are not used)");
  }
  if (!file_->memory_file_system().empty()) {
    lines.push_back("offload: " + file_->path().parent_path().string() + " is on " + file_->memory_file_system() +
                    " (memory): the offloaded state takes host memory there, not disk; for NVMe offload give a "
                    "directory on an NVMe or disk file system (offload.path)");
  }
  std::string why = file_->direct_refusal();
  if (!queue_refusal_.empty()) why += (why.empty() ? "" : "; ") + queue_refusal_;
  if (!why.empty()) lines.push_back("offload: " + why + "; using " + describe());
  return lines;
}

}  // namespace tessera
