// default_corpus_files(): a small English text corpus that every Debian/Ubuntu system carries —
// the license texts under /usr/share/common-licenses (about 270 KB: GPL, Apache, MPL, ...) — so a
// first training run needs no download.
#pragma once

#include <string>
#include <vector>

namespace tessera {

inline constexpr const char* kDefaultCorpusDir = "/usr/share/common-licenses";

// The regular files under `dir` (not recursive), with symlinks resolved to their targets and
// de-duplicated (GPL -> GPL-3 is read once), sorted by resolved path. Throws std::runtime_error
// when none are found, saying how to get them or what to pass instead.
std::vector<std::string> default_corpus_files(const std::string& dir = kDefaultCorpusDir);

}  // namespace tessera
