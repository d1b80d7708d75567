// HostStreams: lookup, ownership and synchronization of a host device's three streams.
#include "tessera/runtime/host_streams.hpp"

#include <exception>
#include <stdexcept>
#include <string>

namespace tessera {

Stream& HostStreams::by_role(StreamRole role) {
  switch (role) {
    case StreamRole::kCompute: return compute_;
    case StreamRole::kCommunication: return communication_;
    case StreamRole::kCopy: return *copy_;
  }
  throw std::invalid_argument("unknown stream role");
}

Stream& HostStreams::own(Stream& stream, const char* what) {
  if (&stream != &compute_ && &stream != &communication_ && &stream != copy_.get()) {
    throw std::invalid_argument(std::string(what) + ": the stream belongs to another device");
  }
  return stream;
}

std::exception_ptr HostStreams::synchronize() {
  std::exception_ptr first;
  for (Stream* s : {static_cast<Stream*>(&compute_), static_cast<Stream*>(&communication_), copy_.get()}) {
    try {
      s->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  return first;
}

}  // namespace tessera
