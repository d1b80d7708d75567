// CollectiveCall: building, describing and comparing the calls ranks made (debug mode, watchdog).
#include "tessera/comm/collective_call.hpp"

#include <sstream>

namespace tessera {

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kSplit: return "split";
    case CollectiveKind::kAllReduceF32: return "all_reduce_f32";
    case CollectiveKind::kReduceScatterF32: return "reduce_scatter_f32";
  }
  return "unknown-collective";
}

namespace {

bool has_payload(CollectiveKind kind) { return kind != CollectiveKind::kBarrier && kind != CollectiveKind::kSplit; }

bool has_op(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kAllReduceF32 || kind == CollectiveKind::kReduceScatterF32;
}

// What makes two calls differ, for the mismatch message: "different counts", ...
std::string what_differs(const CollectiveCall& a, const CollectiveCall& b) {
  if (a.kind != b.kind) return "different collectives";
  std::string parts;
  auto add = [&](bool differs, const char* what) {
    if (differs) parts += std::string(parts.empty() ? "different " : " and ") + what;
  };
  add(a.count != b.count, "counts");
  add(a.dtype != b.dtype, "dtypes");
  add(a.op != b.op, "ops");
  add(a.root != b.root, "roots");
  add(a.sequence != b.sequence, "sequence numbers");
  return parts;
}

}  // namespace

CollectiveCall make_collective_call(CollectiveKind kind, std::uint64_t sequence, std::uint64_t count, DType dtype,
                                    ReduceOp op, int root) {
  CollectiveCall call;
  call.sequence = sequence;
  call.kind = kind;
  if (has_payload(kind)) {
    call.count = count;
    call.dtype = dtype;
  }
  if (has_op(kind)) call.op = op;
  if (kind == CollectiveKind::kBroadcast) call.root = root;
  return call;
}

std::string describe(const CollectiveCall& call) {
  std::ostringstream out;
  out << '#' << call.sequence << ' ' << collective_name(call.kind) << '(';
  if (has_payload(call.kind)) {
    const bool f32_buffers =
        call.kind == CollectiveKind::kAllReduceF32 || call.kind == CollectiveKind::kReduceScatterF32;
    out << "count=" << call.count << ", " << (f32_buffers ? "wire " : "") << dtype_name(call.dtype);
    if (has_op(call.kind)) out << ", " << reduce_op_name(call.op);
    if (call.kind == CollectiveKind::kBroadcast) out << ", root=" << call.root;
  }
  out << ')';
  return out.str();
}

std::string find_collective_mismatch(std::span<const CollectiveCall> calls, const std::string& communicator_name) {
  constexpr int kMaxListed = 4;
  std::ostringstream out;
  int listed = 0;
  int differing = 0;
  for (std::size_t r = 1; r < calls.size(); ++r) {
    if (calls[r] == calls[0]) continue;
    ++differing;
    if (listed == kMaxListed) continue;
    out << (listed == 0 ? "" : "; ") << "rank 0 called " << describe(calls[0]) << " but rank " << r << " called "
        << describe(calls[r]) << " (" << what_differs(calls[0], calls[r]) << ")";
    ++listed;
  }
  if (differing == 0) return {};
  if (differing > listed) out << "; and " << (differing - listed) << " more ranks differ";
  return "collective mismatch on communicator '" + communicator_name + "': " + out.str() +
         ". Every rank must call the same collectives in the same order with the same count, "
         "dtype, op and root; fix the rank whose call sequence diverges";
}

}  // namespace tessera
