// Whole-file reading and writing for the tokenizer files (vocab.json, merges.txt, tokenizer.json,
// tokenizer_config.json): each is small enough to hold in memory, and each is written under a
// temporary name and renamed when complete, so a reader never sees half a file.
#pragma once

#include <filesystem>
#include <string>

namespace tessera::detail {

// The bytes of `path`. Throws std::runtime_error "PATH: cannot open the WHAT (missing or
// unreadable); HINT" when it cannot be opened, and "PATH: read error" when reading fails.
std::string read_tokenizer_file(const std::filesystem::path& path, const std::string& what, const std::string& hint);

// Writes `text` to path.tmp-PID, then renames it to `path`. The directory must exist. Throws
// std::runtime_error naming the file.
void write_tokenizer_file(const std::filesystem::path& path, const std::string& text);

}  // namespace tessera::detail
