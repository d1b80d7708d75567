// sibling_program and shell_word.
#include "flags/program_path.hpp"

#include <filesystem>
#include <system_error>

namespace tessera {

std::string sibling_program(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.empty()) return name;
  return (self.parent_path() / name).string();
}

std::string shell_word(const std::string& text) {
  const bool safe = !text.empty() && text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                            "0123456789_-+=/.,:@%") == std::string::npos;
  if (safe) return text;
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace tessera
