// default_corpus_files(): lists the license texts under /usr/share/common-licenses.
#include "tessera/text/data/default_corpus.hpp"

#include <filesystem>
#include <set>
#include <stdexcept>
#include <system_error>

namespace tessera {

std::vector<std::string> default_corpus_files(const std::string& dir) {
  namespace fs = std::filesystem;
  std::set<std::string> files;  // sorted, unique
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const fs::path resolved = fs::canonical(it->path(), entry_ec);  // follows symlinks
    if (entry_ec) continue;                                         // dangling link
    if (fs::is_regular_file(resolved, entry_ec)) files.insert(resolved.string());
  }
  if (files.empty()) {
    throw std::runtime_error(dir + ": no text files found for the default corpus" +
                             (ec ? " (" + ec.message() + ")" : std::string()) +
                             "; install the base-files package, or pass input text files explicitly "
                             "(e.g. tessera_prepare my_text/*.txt)");
  }
  return {files.begin(), files.end()};
}

}  // namespace tessera
