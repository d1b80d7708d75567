// Recording, storing and checking the XXH64 of meta.h5's values.
#include "tessera/checkpointing/format/meta_digests.hpp"

#include <cstdio>

#include "tessera/checkpointing/format/checksum.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"

namespace tessera::detail {
namespace {

constexpr const char* kDigestGroup = "xxh64";

std::string joined(const std::vector<std::string>& table) {
  std::string all;
  for (const std::string& s : table) all.append(s).push_back('\0');
  return all;
}

}  // namespace

void MetaDigests::record(const std::string& name, const void* data, std::size_t bytes) {
  digests_[name] = xxh64(data, bytes);
}

void MetaDigests::record(const std::string& name, const std::vector<std::string>& table) {
  const std::string all = joined(table);
  record(name, all.data(), all.size());
}

void MetaDigests::write(hid_t file, const std::string& where) const {
  H5Id group = create_group(file, kDigestGroup, where);
  for (const auto& [name, digest] : digests_) write_attribute(group.get(), name, hex64(digest));
}

MetaDigests MetaDigests::read(hid_t file, const std::string& where) {
  MetaDigests digests;
  digests.checking_ = true;
  H5Id group = open_group(file, kDigestGroup, where);
  const std::string w = where + ":/" + kDigestGroup;
  for (const std::string& name : attribute_names(group.get())) {
    std::uint64_t value = 0;
    if (!parse_hex64(read_string_attribute(group.get(), name, w), value)) {
      throw CheckpointError(CheckpointErrorKind::kCorruptData,
                            w + ": the checksum of " + name + " is not 16 hex digits; the file is corrupted");
    }
    digests.digests_[name] = value;
  }
  return digests;
}

void MetaDigests::check(const std::string& name, const void* data, std::size_t bytes, const std::string& where) const {
  if (!checking_) return;
  const auto it = digests_.find(name);
  if (it == digests_.end()) {
    throw CheckpointError(
        CheckpointErrorKind::kCorruptData,
        where + " is corrupted: it records no checksum for its value " + name + "; resume from an earlier checkpoint");
  }
  const std::uint64_t actual = xxh64(data, bytes);
  if (actual != it->second) {
    throw CheckpointError(CheckpointErrorKind::kCorruptData,
                          where + " is corrupted: its stored " + name + " has xxh64 " + hex64(actual) + " but " +
                              hex64(it->second) +
                              " was recorded when it was written; resume from an earlier checkpoint");
  }
}

void MetaDigests::check(const std::string& name, const std::vector<std::string>& table,
                        const std::string& where) const {
  const std::string all = joined(table);
  check(name, all.data(), all.size(), where);
}

}  // namespace tessera::detail
