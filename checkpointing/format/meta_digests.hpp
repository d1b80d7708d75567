// MetaDigests: the XXH64 of every value meta.h5 stores (format 3) — each root setting ("step",
// "zero_stage", ...), each config field ("config.model.layers"), each table ("layout.param_offset",
// "shards.file_bytes", "rng.rank_00001") — kept in meta.h5's group /xxh64 as one attribute per
// value, named as above. The writer records every value it writes; the reader checks every value
// it reads, so a flipped bit is refused naming the value it hit instead of silently remapping
// parameters or changing a setting. HDF5 checks its own metadata; the raw bytes of small tables
// and strings are what this guards.
#pragma once

#include <hdf5.h>

#include "tessera/core/hex64.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tessera::detail {

class MetaDigests {
 public:
  // An empty set, to record into (a save) — it checks nothing; read() gives one that checks.
  MetaDigests() = default;

  void record(const std::string& name, const void* data, std::size_t bytes);
  void record(const std::string& name, const std::string& value) { record(name, value.data(), value.size()); }
  void record(const std::string& name, const std::vector<std::string>& table);
  template <typename T>
  void record(const std::string& name, const std::vector<T>& table) {
    record(name, table.data(), table.size() * sizeof(T));
  }

  // Writes group /xxh64 of `file`. `where`: the file, for messages.
  void write(hid_t file, const std::string& where) const;
  // Reads /xxh64 of `file`; every later check() compares against it.
  static MetaDigests read(hid_t file, const std::string& where);

  // Throws CheckpointError(kCorruptData) naming `where` and `name` when the value's XXH64 differs
  // from the recorded one, or none was recorded. Does nothing for an unchecked (empty) set.
  void check(const std::string& name, const void* data, std::size_t bytes, const std::string& where) const;
  void check(const std::string& name, const std::string& value, const std::string& where) const {
    check(name, value.data(), value.size(), where);
  }
  void check(const std::string& name, const std::vector<std::string>& table, const std::string& where) const;
  template <typename T>
  void check(const std::string& name, const std::vector<T>& table, const std::string& where) const {
    check(name, table.data(), table.size() * sizeof(T), where);
  }

  std::size_t size() const { return digests_.size(); }

 private:
  std::map<std::string, std::uint64_t> digests_;
  bool checking_ = false;
};

// Digests and save ids as text: core/hex64.hpp's.
using ::tessera::hex64;
using ::tessera::parse_hex64;

}  // namespace tessera::detail
