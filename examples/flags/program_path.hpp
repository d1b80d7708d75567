// Where the running program is, so what it prints can name its sibling programs by their real path
// (/proc/self/exe, not argv[0]) and run as printed from any directory:
//   "/abs/build/examples/tessera_prepare --out data/corpus.bin"
#pragma once

#include <string>

namespace tessera {

// The absolute path of `name` in the running program's directory ("/abs/build/examples/train_gpt");
// `name` alone when /proc/self/exe cannot be read.
std::string sibling_program(const std::string& name);

// `text` as one POSIX shell word: unchanged when it holds only safe characters, else single-quoted.
std::string shell_word(const std::string& text);

}  // namespace tessera
