// Console lines of at most kConsoleLineWidth characters (99): a labelled line of parts (separated by
// commas, or another separator) that would be wider continues on lines indented past the label, breaking between parts only:
//   train_gpt: GPT L=12 C=768 NH=12 V=50257 T=1024, 124439808 parameters,
//              8 rank(s) x cuda:0 NVIDIA H100 80GB HBM3, BLAS core Haswell
// A part wider than a line on its own (a long path) stays whole on its line.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tessera {

// The widest line the programs print in a normal run: under 100 characters.
constexpr std::size_t kConsoleLineWidth = 99;

// "label part1, part2, ...\n", wrapped as above; `label` is printed as given ("batch:"), each part
// but the last followed by `separator` (',' or ';').
std::string wrapped_line(const std::string& label, const std::vector<std::string>& parts,
                         std::size_t width = kConsoleLineWidth, char separator = ',');

}  // namespace tessera
