// tessera_prepare: turns text files into byte-level token files for training.
//
//   tessera_prepare [--out FILE] [--val-fraction F] [inputs...]
//
// Each input file is one document; documents are joined with the end-of-text token. With no inputs
// the license texts under /usr/share/common-licenses are used. The last F of the tokens (default
// 0.1) go to FILE with "_val" before the extension (data/corpus_val.bin), the rest to FILE (default
// data/corpus.bin), both in the llm.c token file format. Files are written under a temporary name
// and renamed when complete.
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/data/byte_tokenizer.hpp"
#include "runtime/data/default_corpus.hpp"
#include "runtime/data/token_file.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string out = "data/corpus.bin";
  double val_fraction = 0.1;
  std::vector<std::string> inputs;
};

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw std::runtime_error(path + ": is a directory; pass the text files in it");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open input file (missing or unreadable)");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return text;
}

// data/corpus.bin -> data/corpus_val.bin; corpus -> corpus_val.
std::string validation_path(const std::string& out) {
  const fs::path p(out);
  return (p.parent_path() / (p.stem().string() + "_val" + p.extension().string())).string();
}

void prepare_output_dir(const std::string& out) {
  const fs::path p(out);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw std::runtime_error(out + ": is a directory; --out names the token file to write");
  if (p.has_parent_path()) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) {
      throw std::runtime_error(p.parent_path().string() + ": cannot create the output directory (" + ec.message() +
                               "); choose another --out");
    }
  }
}

int run(const Options& options) {
  if (!(options.val_fraction >= 0.0 && options.val_fraction < 1.0)) {
    throw std::runtime_error("--val-fraction " + std::to_string(options.val_fraction) +
                             " is outside [0, 1); use e.g. 0.1, or 0 for no validation file");
  }
  const std::vector<std::string> inputs =
      options.inputs.empty() ? tessera::default_corpus_files() : options.inputs;
  prepare_output_dir(options.out);

  const tessera::ByteTokenizer tokenizer;
  std::vector<std::int32_t> tokens;
  std::int64_t bytes = 0;
  int documents = 0;
  for (const std::string& path : inputs) {
    const std::string text = read_file(path);
    std::cout << "read " << path << " (" << text.size() << " bytes)" << (text.empty() ? ", empty: skipped" : "") << "\n";
    if (text.empty()) continue;
    if (documents > 0) tokens.push_back(tokenizer.end_of_text());
    tokenizer.encode_append(text, tokens);
    bytes += static_cast<std::int64_t>(text.size());
    ++documents;
  }
  if (tokens.empty()) throw std::runtime_error("the inputs hold no text; pass non-empty text files");

  const auto total = static_cast<std::int64_t>(tokens.size());
  const auto val = static_cast<std::int64_t>(std::floor(static_cast<double>(total) * options.val_fraction));
  const std::span<const std::int32_t> all(tokens);
  tessera::write_token_file(options.out, all.first(static_cast<std::size_t>(total - val)));
  std::cout << inputs.size() << " files read, " << documents << " documents, " << bytes << " bytes\n";
  std::cout << "wrote " << options.out << ": " << (total - val) << " tokens (training)\n";
  if (options.val_fraction > 0.0) {
    const std::string val_out = validation_path(options.out);
    tessera::write_token_file(val_out, all.last(static_cast<std::size_t>(val)));
    std::cout << "wrote " << val_out << ": " << val << " tokens (validation, the last " << options.val_fraction * 100
              << "%)\n";
    if (val == 0) std::cerr << "tessera_prepare: warning: the validation file is empty; use more text or a larger --val-fraction\n";
  }
  std::cout << "vocabulary: " << tokenizer.vocab_size() << " (bytes 0..255, end-of-text " << tokenizer.end_of_text()
            << ")\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  po::options_description visible("tessera_prepare [--out FILE] [--val-fraction F] [inputs...]\n\n"
                                  "Tokenizes text files (byte-level, one document per file, documents separated\n"
                                  "by end-of-text) into llm.c-format token files. With no inputs, uses the texts\n"
                                  "under /usr/share/common-licenses.\n\nOptions");
  visible.add_options()
      ("help,h", "print this help")
      ("out,o", po::value(&options.out)->default_value(options.out), "training token file to write")
      ("val-fraction", po::value(&options.val_fraction)->default_value(options.val_fraction, "0.1"),
       "fraction of the tokens (the tail) written to OUT with _val before the extension; 0 for none");
  po::options_description all;
  all.add(visible).add_options()("inputs", po::value(&options.inputs), "input text files");
  po::positional_options_description positional;
  positional.add("inputs", -1);

  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(all).positional(positional).run(), vm);
    if (vm.count("help") != 0) {
      std::cout << visible << "\n";
      return 0;
    }
    po::notify(vm);
    return run(options);
  } catch (const po::error& e) {
    std::cerr << "tessera_prepare: " << e.what() << "\n" << visible << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tessera_prepare: error: " << e.what() << "\n";
    return 1;
  }
}
