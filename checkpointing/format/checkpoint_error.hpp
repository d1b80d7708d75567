// CheckpointError: what goes wrong with a checkpoint that a user can fix — a missing or truncated
// file, a format this build does not read, a checkpoint of another model, corrupted data, an I/O
// failure. Every message names the file (and dataset) and what differs; kind() lets programs and
// tests tell the cases apart. Thrown on every rank of a collective load or save (see
// rank_agreement.hpp), so a failure on one rank never leaves the others waiting.
#pragma once

#include <stdexcept>
#include <string>

namespace tessera {

enum class CheckpointErrorKind {
  kMissingFile,     // a shard file, meta.h5 or the checkpoint directory does not exist
  kTruncatedFile,   // a file is shorter (or longer) than recorded when it was written
  kUnknownFormat,   // a format version (or file kind) this build does not understand
  kConfigMismatch,  // the checkpoint was written for another model (names, shapes, config fields)
  kCorruptData,     // a dataset's checksum does not match its data, or a file cannot be parsed
  kIo,              // the file system or HDF5 failed (permissions, disk full, ...)
};

const char* checkpoint_error_kind_name(CheckpointErrorKind kind);  // "missing file", ...

class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(CheckpointErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  CheckpointErrorKind kind() const { return kind_; }

 private:
  CheckpointErrorKind kind_;
};

}  // namespace tessera
