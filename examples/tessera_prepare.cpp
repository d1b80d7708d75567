// tessera_prepare: turns text files into token files for training.
//
//   tessera_prepare [--out FILE] [--val-fraction F] [--bpe-vocab N | --tokenizer DIR] [inputs...]
//
// Tokenizers: bytes (default); --bpe-vocab N learns a byte-level BPE of N tokens from the inputs
// and writes its vocab.json and merges.txt beside FILE; --tokenizer DIR uses GPT-2-format files
// from DIR (GPT-2's own, or ones an earlier run learned), or a Hugging Face tokenizer.json of a
// byte-level BPE (DIR holding it and no vocab.json, or the file itself: GPT-2's, Llama 3's, ...).
// The token files record which tokenizer made them, so train_gpt and tessera_generate decode with it.
//
// Each input file is one document; documents are joined with the end-of-text token. With no inputs
// the license texts under /usr/share/common-licenses are used. The last F of the tokens (default
// 0.1) go to FILE with "_val" before the extension (data/corpus_val.bin), the rest to FILE (default
// data/corpus.bin), both in the llm.c token file format. Files are written under a temporary name
// and renamed when complete.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/core/number_text.hpp"
#include "flags/program_options.hpp"
#include "tessera/core/warning.hpp"
#include "tessera/text/data/default_corpus.hpp"
#include "tessera/text/data/token_file.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/bpe_trainer.hpp"
#include "tessera/text/tokenizer/byte_tokenizer.hpp"
#include "tessera/text/tokenizer/tokenizer_spec.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct Options {
  std::string out = "data/corpus.bin";
  double val_fraction = 0.1;
  std::int32_t bpe_vocab = 0;  // > 0: learn a BPE of this many tokens
  std::string tokenizer_dir;   // GPT-2-format files or a tokenizer.json to tokenize with
  std::vector<std::string> inputs;
};

struct ChosenTokenizer {
  std::unique_ptr<tessera::Tokenizer> tokenizer;
  tessera::TokenizerSpec record;  // as the token files record it
};

// Learns the BPE from `documents`, writes it beside `out` and records it as "." (the token file's
// directory).
ChosenTokenizer learn_bpe(const std::vector<std::string>& documents, std::int32_t vocab_size, const std::string& out) {
  tessera::BpeTrainer trainer;
  for (const std::string& text : documents) trainer.add_text(text);
  tessera::BpeVocabulary vocabulary = trainer.train(vocab_size);
  const fs::path dir = fs::path(out).has_parent_path() ? fs::path(out).parent_path() : fs::path(".");
  tessera::write_bpe_vocabulary(dir, vocabulary);
  std::cout << "learned a BPE of " << vocabulary.size() << " tokens (" << vocabulary.merges.size() << " merges, "
            << trainer.distinct_pieces() << " distinct pieces); wrote " << (dir / tessera::kVocabFileName).string()
            << " and " << (dir / tessera::kMergesFileName).string() << "\n";
  if (vocabulary.size() < vocab_size) {
    std::cout << "  (fewer than --bpe-vocab " << vocab_size << ": no pair of symbols occurs twice more)\n";
  }
  ChosenTokenizer chosen;
  chosen.record = {tessera::TokenizerKind::kBpe, ".", vocabulary.size(), tessera::bpe_files_hash(dir)};
  chosen.tokenizer = std::make_unique<tessera::BpeTokenizer>(std::move(vocabulary), "bpe");
  return chosen;
}

ChosenTokenizer choose_tokenizer(const Options& options, const std::vector<std::string>& documents) {
  if (options.bpe_vocab > 0 && !options.tokenizer_dir.empty()) {
    throw std::runtime_error("--bpe-vocab learns a tokenizer and --tokenizer uses one; give only one of them");
  }
  if (options.bpe_vocab > 0) return learn_bpe(documents, options.bpe_vocab, options.out);
  ChosenTokenizer chosen;
  if (!options.tokenizer_dir.empty()) {
    const std::string dir = fs::absolute(options.tokenizer_dir).lexically_normal().string();
    chosen.record = tessera::bpe_tokenizer_spec(dir, tessera::TokenizerKind::kBpe);
    if (chosen.record.kind == tessera::TokenizerKind::kBpe && chosen.record.vocab_size == tessera::kGpt2VocabSize) {
      chosen.record.kind = tessera::TokenizerKind::kGpt2;
    }
  } else {
    chosen.record = tessera::bytes_tokenizer_spec();
  }
  chosen.tokenizer = tessera::load_tokenizer(chosen.record);
  if (chosen.tokenizer->end_of_text() < 0) {
    throw std::runtime_error("--tokenizer " + options.tokenizer_dir +
                             ": vocab.json has no \"<|endoftext|>\" token to separate documents with");
  }
  return chosen;
}

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
    throw std::runtime_error("--val-fraction " + tessera::shortest_number_text(options.val_fraction) +
                             " is outside [0, 1); use e.g. 0.1, or 0 for no validation file");
  }
  const std::vector<std::string> inputs = options.inputs.empty() ? tessera::default_corpus_files() : options.inputs;
  prepare_output_dir(options.out);
  if (options.bpe_vocab < 0) throw std::runtime_error("--bpe-vocab must be positive (e.g. 512), or 0 for bytes");

  std::vector<std::string> documents;
  std::int64_t bytes = 0;
  for (const std::string& path : inputs) {
    std::string text = read_file(path);
    std::cout << "read " << path << " (" << text.size() << " bytes)" << (text.empty() ? ", empty: skipped" : "")
              << "\n";
    if (text.empty()) continue;
    bytes += static_cast<std::int64_t>(text.size());
    documents.push_back(std::move(text));
  }
  if (documents.empty()) throw std::runtime_error("the inputs hold no text; pass non-empty text files");
  const ChosenTokenizer chosen = choose_tokenizer(options, documents);
  const tessera::Tokenizer& tokenizer = *chosen.tokenizer;
  std::vector<std::int32_t> tokens;
  for (const std::string& text : documents) {
    if (!tokens.empty()) tokens.push_back(tokenizer.end_of_text());
    tokenizer.encode_append(text, tokens);
  }

  const auto total = static_cast<std::int64_t>(tokens.size());
  const auto val = static_cast<std::int64_t>(std::floor(static_cast<double>(total) * options.val_fraction));
  const std::span<const std::int32_t> all(tokens);
  tessera::write_token_file(options.out, all.first(static_cast<std::size_t>(total - val)),
                            tessera::TokenFileFormat::kLlmc, chosen.record);
  std::cout << inputs.size() << " files read, " << documents.size() << " documents, " << bytes << " bytes\n";
  std::cout << "wrote " << options.out << ": " << (total - val) << " tokens (training)\n";
  if (options.val_fraction > 0.0) {
    const std::string val_out = validation_path(options.out);
    tessera::write_token_file(val_out, all.last(static_cast<std::size_t>(val)), tessera::TokenFileFormat::kLlmc,
                              chosen.record);
    std::cout << "wrote " << val_out << ": " << val << " tokens (validation, the last " << options.val_fraction * 100
              << "%)\n";
    if (val == 0)
      tessera::warn(0, "tessera_prepare: the validation file is empty; use more text or a larger --val-fraction");
  }
  tessera::TokenizerSpec shown = chosen.record;  // "." is the token file's directory
  if (shown.dir == ".")
    shown.dir = fs::path(options.out).has_parent_path() ? fs::path(options.out).parent_path().string() : ".";
  std::cout << "tokenizer: " << shown.describe() << ", end-of-text " << tokenizer.end_of_text() << "; "
            << static_cast<double>(bytes) / static_cast<double>(total) << " bytes per token\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  po::options_description visible("Options");
  // clang-format off
  visible.add_options()
      ("out,o", tessera::value_with_default(&options.out), "training token file to write")
      ("val-fraction", tessera::value_with_default(&options.val_fraction),
       "fraction of the tokens (the tail) written to OUT with _val before the extension; 0 for none")
      ("bpe-vocab", tessera::value_with_default(&options.bpe_vocab),
       "learn a byte-level BPE of N tokens from the inputs (vocab.json and merges.txt beside OUT); 0: bytes")
      ("tokenizer", po::value(&options.tokenizer_dir),
       "tokenize with the GPT-2-format vocab.json and merges.txt in DIR (e.g. GPT-2's own), or with a "
       "Hugging Face tokenizer.json of a byte-level BPE (DIR holding it, or the file)");
  // clang-format on
  po::options_description hidden;
  hidden.add_options()("inputs", po::value(&options.inputs)->multitoken(), "input text files");
  po::positional_options_description positional;
  positional.add("inputs", -1);
  tessera::ProgramOptions program("tessera_prepare",
                                  "tessera_prepare [--out FILE] [--val-fraction F] [--bpe-vocab N | --tokenizer DIR] "
                                  "[inputs...]\n\n"
                                  "Tokenizes text files (one document per file, documents separated by\n"
                                  "end-of-text) into llm.c-format token files that record their tokenizer.\n"
                                  "With no inputs, uses the texts under /usr/share/common-licenses.");
  program.add(visible);
  program.add_hidden(hidden);
  program.set_positional(positional);
  try {
    if (!program.parse(argc, argv)) return 0;
  } catch (const std::invalid_argument& e) {
    std::cerr << "tessera_prepare: " << e.what() << "\n";
    return 2;
  }
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::cerr << "tessera_prepare: error: " << e.what() << "\n";
    return 1;
  }
}
