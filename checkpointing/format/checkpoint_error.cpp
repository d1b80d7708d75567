// Names of checkpoint error kinds.
#include "tessera/checkpointing/format/checkpoint_error.hpp"

namespace tessera {

const char* checkpoint_error_kind_name(CheckpointErrorKind kind) {
  switch (kind) {
    case CheckpointErrorKind::kMissingFile: return "missing file";
    case CheckpointErrorKind::kTruncatedFile: return "truncated file";
    case CheckpointErrorKind::kUnknownFormat: return "unknown format";
    case CheckpointErrorKind::kConfigMismatch: return "config mismatch";
    case CheckpointErrorKind::kCorruptData: return "corrupt data";
    case CheckpointErrorKind::kIo: return "I/O error";
  }
  return "unknown";
}

}  // namespace tessera
