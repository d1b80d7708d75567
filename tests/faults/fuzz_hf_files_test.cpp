// Hugging Face files from elsewhere, mutated: a tokenizer.json (a byte-level BPE with merges and
// added tokens) and the config.json of a GPT-2 and of a Llama, with numbers made hostile or of the
// wrong JSON type and bytes flipped, cut and repeated. Reading each (and, for the tokenizer,
// encoding and decoding a sentence with it) either succeeds or refuses naming the file; no crash,
// and no allocation past 64 x the file's size + 1 MiB.
// tessera-test-timeout: 60
// tessera-test-executable: own (it replaces the global operator new: faults/fuzz_support.hpp)
#include <gtest/gtest.h>

#include "tessera/checkpointing/export/gpt_model_fields.hpp"
#include "tessera/checkpointing/export/hf_model_config.hpp"
#include "tessera/text/tokenizer/bpe_tokenizer.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_reader.hpp"
#include "tessera/text/tokenizer/hf_tokenizer_writer.hpp"
#include "tests/faults/fuzz_support.hpp"
#include "tests/faults/small_bpe_vocabulary.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera::testing::fuzz {
namespace {

void read_and_use_tokenizer(const std::filesystem::path& file) {
  HfTokenizer hf = read_hf_tokenizer(file);
  BpeTokenizer tokenizer(std::move(hf.vocabulary), "hf", std::move(hf.encoding));
  tokenizer.decode(tokenizer.encode("hello world, hello <|endoftext|>"));
}

TEST(FuzzHfFiles, MutatedTokenizerJsonIsReadOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_hf_tokenizer");
  write_hf_tokenizer_files(dir.path(), small_bpe_vocabulary());
  const std::filesystem::path file = dir / kHfTokenizerFileName;
  const std::string text = read_file(file);
  ASSERT_NO_THROW(read_and_use_tokenizer(file));
  const FuzzCounts c = fuzz_reader(
      "tokenizer.json", file, 0x70ce, 1500, [&](Rng& rng) { return mutate_json_stacked(text, rng); },
      [&] { read_and_use_tokenizer(file); }, {file.string(), "hf tokenizer"});
  EXPECT_GT(c.refused, 100);
  EXPECT_GT(c.accepted, 0);
}

TEST(FuzzHfFiles, MutatedConfigJsonIsReadOrRefusedNamingTheFile) {
  ScratchDir dir("fuzz_hf_config");
  GptConfig gpt;
  gpt.vocab_size = 257;
  GptConfig llama = GptConfig::llama(257, 128, 2, 4, 64);
  llama.kv_heads = 2;
  int refused = 0, accepted = 0;
  for (const GptConfig& config : {gpt, llama}) {
    RunConfig fields;
    add_gpt_config(fields, config);
    const std::filesystem::path file = dir / "config.json";
    write_hf_config(file, fields, config.vocab_size, DType::kF32, /*step=*/7);
    const std::string text = read_file(file);
    ASSERT_NO_THROW(read_hf_config(file));
    const FuzzCounts c = fuzz_reader(
        "config.json", file, config.architecture == GptArchitecture::kLlama ? 0xc0f1 : 0xc0f2, 1000,
        [&](Rng& rng) { return mutate_json_stacked(text, rng); }, [&] { read_hf_config(file); }, {file.string()});
    refused += c.refused;
    accepted += c.accepted;
  }
  EXPECT_GT(refused, 200);
  EXPECT_GT(accepted, 0);
}

}  // namespace
}  // namespace tessera::testing::fuzz
