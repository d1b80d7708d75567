// IoQueue implementations: io_uring through liburing, and blocking pread/pwrite.
#include "tessera/runtime/offload/io_queue.hpp"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace tessera {
namespace {

std::string describe(const std::string& path, const IoRequest& r, int error) {
  std::string what = std::string(r.op == IoOp::kRead ? "reading " : "writing ") + std::to_string(r.bytes) +
                     " bytes at offset " + std::to_string(r.offset) + " of the offload file " + path + " failed: ";
  if (error == 0) return what + "the file ended early";
  what += std::strerror(error);
  if (error == ENOSPC || error == EDQUOT) what += " (the disk of the offload directory is full)";
  return what;
}

class BlockingIoQueue final : public IoQueue {
 public:
  BlockingIoQueue(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  Ticket submit(const IoRequest& r) override {
    const Ticket t = ++last_;
    auto* p = static_cast<char*>(r.buffer);
    std::size_t done = 0;
    while (done < r.bytes) {
      const auto offset = static_cast<off_t>(r.offset + static_cast<std::int64_t>(done));
      const ssize_t n = r.op == IoOp::kRead ? ::pread(fd_, p + done, r.bytes - done, offset)
                                            : ::pwrite(fd_, p + done, r.bytes - done, offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failures_[t] = describe(path_, r, n < 0 ? errno : 0);
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    return t;
  }

  void wait(Ticket t) override {
    const auto it = failures_.find(t);
    if (it == failures_.end()) return;
    const std::string message = it->second;
    failures_.erase(it);
    throw IoError(message);
  }

  void wait_all() override {
    if (failures_.empty()) return;
    const std::string message = failures_.begin()->second;
    failures_.clear();
    throw IoError(message);
  }

  const char* name() const override { return "pread/pwrite"; }

 private:
  int fd_;
  std::string path_;
  Ticket last_ = 0;
  std::unordered_map<Ticket, std::string> failures_;
};

class UringIoQueue final : public IoQueue {
 public:
  // Check init_error() (0 or a negative errno) before use.
  UringIoQueue(int fd, std::string path, int depth) : fd_(fd), path_(std::move(path)) {
    init_error_ = io_uring_queue_init(static_cast<unsigned>(depth), &ring_, 0);
  }
  ~UringIoQueue() override {
    if (init_error_ != 0) return;
    try {
      while (!pending_.empty()) reap_one();
    } catch (...) {
    }
    io_uring_queue_exit(&ring_);
  }

  Ticket submit(const IoRequest& r) override {
    const Ticket t = ++last_;
    pending_[t] = Pending{r, 0};
    enqueue(t);
    return t;
  }

  void wait(Ticket t) override {
    while (pending_.count(t) != 0) reap_one();
    rethrow(t);
  }

  void wait_all() override {
    while (!pending_.empty()) reap_one();
    if (failures_.empty()) return;
    const std::string message = failures_.begin()->second;
    failures_.clear();
    throw IoError(message);
  }

  const char* name() const override { return "io_uring"; }
  int init_error() const { return init_error_; }

 private:
  struct Pending {
    IoRequest request;
    std::size_t done;  // bytes transferred so far (a short transfer is resubmitted for the rest)
  };

  void enqueue(Ticket t) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // the submission queue is full: let one transfer finish
      reap_one();
      sqe = io_uring_get_sqe(&ring_);
    }
    const Pending& p = pending_.at(t);
    char* buffer = static_cast<char*>(p.request.buffer) + p.done;
    const auto bytes = static_cast<unsigned>(p.request.bytes - p.done);
    const auto offset = static_cast<__u64>(p.request.offset + static_cast<std::int64_t>(p.done));
    if (p.request.op == IoOp::kRead) {
      io_uring_prep_read(sqe, fd_, buffer, bytes, offset);
    } else {
      io_uring_prep_write(sqe, fd_, buffer, bytes, offset);
    }
    io_uring_sqe_set_data64(sqe, t);
    int submitted = io_uring_submit(&ring_);
    while (submitted == -EINTR || submitted == -EAGAIN || submitted == -EBUSY) {
      if (submitted != -EINTR && !pending_.empty()) reap_one();
      submitted = io_uring_submit(&ring_);
    }
    if (submitted < 0) fail(t, -submitted);
  }

  void reap_one() {
    io_uring_cqe* cqe = nullptr;
    int rc = io_uring_wait_cqe(&ring_, &cqe);
    while (rc == -EINTR) rc = io_uring_wait_cqe(&ring_, &cqe);
    if (rc < 0) throw IoError("waiting for the offload file " + path_ + ": " + std::strerror(-rc));
    const Ticket t = io_uring_cqe_get_data64(cqe);
    const int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    auto it = pending_.find(t);
    if (it == pending_.end()) return;
    Pending& p = it->second;
    if (res == -EINTR || res == -EAGAIN) {
      enqueue(t);
    } else if (res <= 0) {
      fail(t, res < 0 ? -res : 0);
    } else {
      p.done += static_cast<std::size_t>(res);
      if (p.done < p.request.bytes) {
        enqueue(t);
      } else {
        pending_.erase(it);
      }
    }
  }

  void fail(Ticket t, int error) {
    failures_[t] = describe(path_, pending_.at(t).request, error);
    pending_.erase(t);
  }

  void rethrow(Ticket t) {
    const auto it = failures_.find(t);
    if (it == failures_.end()) return;
    const std::string message = it->second;
    failures_.erase(it);
    throw IoError(message);
  }

  int fd_;
  std::string path_;
  io_uring ring_{};
  int init_error_ = 0;
  Ticket last_ = 0;
  std::unordered_map<Ticket, Pending> pending_;
  std::unordered_map<Ticket, std::string> failures_;
};

}  // namespace

std::unique_ptr<IoQueue> make_io_queue(int fd, const std::string& path, int depth, bool blocking,
                                       std::string* refusal) {
  if (!blocking) {
    auto queue = std::make_unique<UringIoQueue>(fd, path, depth);
    if (queue->init_error() == 0) return queue;
    if (refusal != nullptr) *refusal = std::string("io_uring is not available: ") + std::strerror(-queue->init_error());
  }
  return std::make_unique<BlockingIoQueue>(fd, path);
}

}  // namespace tessera
