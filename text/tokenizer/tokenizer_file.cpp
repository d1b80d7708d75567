// Tokenizer files read whole and written through a renamed temporary file.
#include "tessera/text/tokenizer/tokenizer_file.hpp"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

namespace tessera::detail {

namespace fs = std::filesystem;

std::string read_tokenizer_file(const fs::path& path, const std::string& what, const std::string& hint) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open the " + what + " (missing or unreadable); " + hint);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path.string() + ": read error");
  return text;
}

void write_tokenizer_file(const fs::path& path, const std::string& text) {
  const fs::path tmp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out)
      throw std::runtime_error(tmp.string() + ": cannot write; check that the directory exists and is writable");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp);
    throw std::runtime_error(path.string() + ": cannot rename " + tmp.string() + " to it: " + ec.message());
  }
}

}  // namespace tessera::detail
