// IoQueue: reads and writes of one file, submitted now and waited for later, so the transfers of
// one block overlap the work on another. Two implementations (make_io_queue picks):
//   io_uring   submissions go to the kernel's ring and complete asynchronously (liburing)
//   blocking   pread/pwrite run at submission; waiting returns at once (no overlap)
// A transfer that fails (or comes up short at the end of the file) makes wait() throw an IoError
// naming the file, the operation, the offset and the system's reason. One thread uses a queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace tessera {

class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class IoOp { kRead, kWrite };

struct IoRequest {
  IoOp op = IoOp::kRead;
  void* buffer = nullptr;  // aligned to kDirectIoAlignment for an O_DIRECT file
  std::size_t bytes = 0;
  std::int64_t offset = 0;
};

class IoQueue {
 public:
  using Ticket = std::uint64_t;

  virtual ~IoQueue() = default;
  // Starts `request` (may first wait for an earlier one when the queue is full).
  virtual Ticket submit(const IoRequest& request) = 0;
  // Returns once the transfer of `ticket` has completed; throws IoError if it failed (once).
  virtual void wait(Ticket ticket) = 0;
  // Waits for every submitted transfer; throws the first failure.
  virtual void wait_all() = 0;
  // "io_uring", "pread/pwrite".
  virtual const char* name() const = 0;
};

// io_uring on `fd` with `depth` entries when the kernel allows it (otherwise, or when `blocking`
// is asked for, pread/pwrite; `refusal` then says why io_uring was not used, "" when asked).
// `path` names the file in errors.
std::unique_ptr<IoQueue> make_io_queue(int fd, const std::string& path, int depth, bool blocking, std::string* refusal);

}  // namespace tessera
