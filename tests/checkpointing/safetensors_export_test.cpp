// Exports others load: a checkpoint of a trained tiny GPT (vocabulary 13, of which the tokenizer's
// 11 are real) exported as safetensors is read back here with nothing but nlohmann-json and byte
// reads — the 8-byte little-endian header length, 8-byte alignment, Hugging Face GPT-2 names, F32 /
// BF16 dtypes, shapes, contiguous data_offsets, __metadata__ — and its values equal the engine's
// parameters with the Conv1D transposes and the vocabulary slice done here by hand; config.json
// is GPT2Config's; torch-names HDF5 holds the same; --init-from either gives the same weights at
// another rank count (padding rows zero), from bf16, from names without the "transformer." prefix and
// from the file split into shards with an index;
// a wrong extension or another model is refused.
// tessera-test-ranks: 2
// tessera-test-timeout: 200
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/export/checkpoint_export.hpp"
#include "tessera/checkpointing/export/safetensors_file.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/precision/float_bits.hpp"
#include "tests/checkpointing/export/tiny_export_files.hpp"
#include "tests/launch/child_job.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr std::int64_t kRealVocab = 11;  // tiny_gpt's 13 rows: 11 tokens and 2 padding rows

// The Hugging Face name, and the (out, in) -> (in, out) transpose, spelled out for tiny_gpt's 2 blocks.
struct Expected {
  std::string tessera;
  bool transposed;
};
std::map<std::string, Expected> expected_names() {
  std::map<std::string, Expected> names{{"transformer.wte.weight", {"embed.wte", false}},
                                        {"transformer.wpe.weight", {"embed.wpe", false}},
                                        {"transformer.ln_f.weight", {"ln_f.weight", false}},
                                        {"transformer.ln_f.bias", {"ln_f.bias", false}}};
  for (const std::string n : {"0", "1"}) {
    const std::string t = "transformer.h." + n + ".", h = "h." + n + ".";
    for (const std::string ln : {"ln_1", "ln_2"}) {
      names[t + ln + ".weight"] = {h + ln + ".weight", false};
      names[t + ln + ".bias"] = {h + ln + ".bias", false};
    }
    const std::pair<std::string, std::string> linears[] = {
        {"attn.c_attn", "attn.qkv"}, {"attn.c_proj", "attn.proj"}, {"mlp.c_fc", "mlp.fc"}, {"mlp.c_proj", "mlp.proj"}};
    for (const auto& [theirs, ours] : linears) {
      names[t + theirs + ".weight"] = {h + ours + ".weight", true};
      names[t + theirs + ".bias"] = {h + ours + ".bias", false};
    }
  }
  return names;
}

// What the file must hold for `hf` from the engine's full parameters: transposed, vocabulary sliced.
std::vector<float> expected_values(const std::string& hf, const Expected& e,
                                   const std::map<std::string, std::vector<float>>& params, const Module& model,
                                   Shape* shape) {
  Shape s;
  for (const NamedParameter& np : const_cast<Module&>(model).named_parameters()) {
    if (np.name == e.tessera) s = np.parameter->shape;
  }
  const std::vector<float>& v = params.at(e.tessera);
  if (e.transposed) {
    *shape = {s[1], s[0]};
    std::vector<float> out(v.size());
    for (std::int64_t r = 0; r < s[0]; ++r) {
      for (std::int64_t c = 0; c < s[1]; ++c)
        out[static_cast<std::size_t>(c * s[0] + r)] = v[static_cast<std::size_t>(r * s[1] + c)];
    }
    return out;
  }
  if (hf == "transformer.wte.weight") {
    *shape = {kRealVocab, s[1]};
    return {v.begin(), v.begin() + kRealVocab * s[1]};
  }
  *shape = s;
  return v;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Parses `file` independently of the writer and compares every tensor with the engine's values.
void check_safetensors(const fs::path& file, const std::string& dtype, const Module& model,
                       const std::map<std::string, std::vector<float>>& params) {
  const std::string bytes = read_bytes(file);
  ASSERT_GE(bytes.size(), 8u) << file;
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);  // little-endian
  ASSERT_LE(8 + n, bytes.size()) << "header length " << n;
  EXPECT_EQ((8 + n) % 8, 0u) << "the data does not start 8-byte aligned: header length " << n;
  const std::string text = bytes.substr(8, n);
  const std::size_t last = text.find_last_not_of(' ');
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(text[last], '}') << "the header is padded with something other than spaces";
  const json header = json::parse(text);
  const std::uint64_t data_size = bytes.size() - 8 - n;
  ASSERT_TRUE(header.contains("__metadata__"));
  EXPECT_EQ(header["__metadata__"]["format"], "pt");
  EXPECT_EQ(header["__metadata__"]["tessera_step"], "2");
  const auto names = expected_names();
  std::set<std::string> seen;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    seen.insert(name);
    const auto it = names.find(name);
    if (it == names.end()) {
      ADD_FAILURE() << "unexpected tensor " << name;
      continue;
    }
    Shape shape;
    const std::vector<float> expected = expected_values(name, it->second, params, model, &shape);
    EXPECT_EQ(entry["dtype"], dtype) << name;
    EXPECT_EQ(entry["shape"].get<Shape>(), shape) << name;
    const std::uint64_t begin = entry["data_offsets"][0], end = entry["data_offsets"][1];
    const std::size_t size = dtype == "F32" ? 4 : 2;
    ASSERT_EQ(end - begin, expected.size() * size) << name;
    ASSERT_LE(end, data_size) << name;
    ranges.emplace_back(begin, end);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      const char* at = bytes.data() + 8 + n + begin + i * size;
      float actual = 0.0f, want = expected[i];
      if (size == 4) {
        std::memcpy(&actual, at, 4);
      } else {
        const std::uint16_t h =
            static_cast<std::uint16_t>(static_cast<unsigned char>(at[0]) | static_cast<unsigned char>(at[1]) << 8);
        actual = bf16_to_f32(h);
        want = bf16_to_f32(f32_to_bf16(want));
      }
      if (std::memcmp(&actual, &want, 4) != 0 && wrong++ == 0) {
        ADD_FAILURE() << name << "[" << i << "]: expected " << want << " actual " << actual;
      }
    }
    EXPECT_EQ(wrong, 0u) << name << ": values differing from the engine's";
  }
  EXPECT_EQ(seen.size(), names.size()) << "tensors written: " << seen.size();
  EXPECT_FALSE(header.contains("lm_head.weight")) << "the tied head is written";
  std::sort(ranges.begin(), ranges.end());
  std::uint64_t at = 0;
  for (const auto& [begin, end] : ranges) {
    EXPECT_EQ(begin, at) << "a gap or overlap in data_offsets";
    at = end;
  }
  EXPECT_EQ(at, data_size) << "the data section is longer than its tensors";
}

void check_config_json(const fs::path& path) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " not written";
  const json c = json::parse(in);
  EXPECT_EQ(c["model_type"], "gpt2");
  EXPECT_EQ(c["architectures"][0], "GPT2LMHeadModel");
  EXPECT_EQ(c["vocab_size"], kRealVocab);
  EXPECT_EQ(c["n_positions"], tiny_gpt().max_seq_len);
  EXPECT_EQ(c["n_embd"], tiny_gpt().channels);
  EXPECT_EQ(c["n_layer"], tiny_gpt().layers);
  EXPECT_EQ(c["n_head"], tiny_gpt().heads);
  EXPECT_EQ(c["activation_function"], "gelu_new");
  EXPECT_EQ(c["layer_norm_epsilon"], 1e-5);
  EXPECT_EQ(c["tie_word_embeddings"], true);
  EXPECT_EQ(c["eos_token_id"], kRealVocab - 1);
}

// The engine's parameters as an import from a Hugging Face export gives them: padding rows zero.
std::map<std::string, std::vector<float>> with_padding_zeroed(std::map<std::string, std::vector<float>> params) {
  auto& wte = params.at("embed.wte");
  std::fill(wte.begin() + kRealVocab * tiny_gpt().channels, wte.end(), 0.0f);
  return params;
}

TEST(SafetensorsExport, ParsesIndependentlyAndLoadsBack) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  const fs::path st = dir.path() / "export" / "model.safetensors", st16 = dir.path() / "bf16" / "model.safetensors";
  const fs::path hf_h5 = dir.path() / "model_hf.h5";
  std::map<std::string, std::vector<float>> saved;
  {
    TrainedEngine run(world, RunSetup(ZeroStage::kStage3));
    run.train(0, 2);
    RunConfig config = tiny_run_config();
    config.set_run("tokenizer_vocab", kRealVocab);
    save_checkpoint(*run.engine, world, dir.path(), run.progress(2), config);
    saved = gather_state(*run.engine, 0);
    if (world.rank() == 0) {
      try {
        fs::create_directories(st.parent_path());
        fs::create_directories(st16.parent_path());
        ExportOptions o;
        o.format = ExportFormat::kSafetensors;
        const ExportSummary s = export_checkpoint(dir.path(), st, o);
        EXPECT_EQ(s.vocab_size, kRealVocab);
        EXPECT_EQ(s.parameters, 28);
        check_safetensors(st, "F32", *run.model, saved);
        check_config_json(st.parent_path() / "config.json");
        o.dtype = DType::kBF16;
        export_checkpoint(dir.path(), st16, o);
        check_safetensors(st16, "BF16", *run.model, saved);
        o.format = ExportFormat::kTorchNames;
        o.dtype = DType::kF32;
        export_checkpoint(dir.path(), hf_h5, o);
        for (const auto& [name, e] : expected_names()) {
          Shape shape, stored;
          const auto expected = expected_values(name, e, saved, *run.model, &shape);
          EXPECT_EQ(compare_states({{name, h5_read(hf_h5.string(), "/model/" + name, &stored)}}, {{name, expected}}),
                    "")
              << "torch-names";
          EXPECT_EQ(stored, shape) << name;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank 0: " << e.what();
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // --init-from at 1 rank, ZeRO-1, another seed: the exported weights, padding rows zero.
  if (auto comm = first_ranks(1)) {
    for (const fs::path& file : {st, hf_h5}) {
      TrainedEngine tuned(*comm, RunSetup(ZeroStage::kStage1), /*seed=*/999);
      load_exported_weights(*tuned.engine, *comm, file, tiny_run_config());
      EXPECT_EQ(compare_states(gather_state(*tuned.engine, 0), with_padding_zeroed(saved)), "") << file;
      EXPECT_EQ(tuned.engine->optimizer_steps(), 0);
    }
    // A model of another depth refuses it, naming the field.
    GptConfig deeper = tiny_gpt();
    deeper.layers = 3;
    TrainedEngine other(*comm, RunSetup(ZeroStage::kStage0), kSeed, deeper);
    try {
      load_exported_weights(*other.engine, *comm, st, tiny_run_config(deeper));
      ADD_FAILURE() << "a 3-layer model accepted a 2-layer export";
    } catch (const CheckpointError& e) {
      EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch);
      EXPECT_NE(std::string(e.what()).find("layers = 2"), std::string::npos) << e.what();
    }
  }
  // The bf16 file: the exported weights rounded to bf16; a file with GPT2Model's names (no
  // "transformer." prefix, as Hugging Face's published GPT-2 files) loads like the prefixed one.
  const fs::path plain = dir.path() / "plain" / "model.safetensors";
  if (world.rank() == 0) {
    try {
      fs::create_directories(plain.parent_path());
      fs::copy_file(st.parent_path() / "config.json", plain.parent_path() / "config.json");
      SafetensorsReader reader(st);
      std::vector<SafetensorsTensor> tensors;
      for (const auto& [name, t] : reader.tensors()) tensors.push_back({name.substr(12), t.dtype, t.shape});
      SafetensorsWriter writer(plain, tensors, {});
      for (const auto& [name, t] : reader.tensors()) writer.write_next(reader.read_f32(name));
      writer.finish();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank 0: " << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (auto comm = first_ranks(1)) {
    std::map<std::string, std::vector<float>> rounded = with_padding_zeroed(saved);
    for (auto& [name, values] : rounded) {
      for (float& x : values) x = bf16_to_f32(f32_to_bf16(x));
    }
    TrainedEngine from_bf16(*comm, RunSetup(ZeroStage::kStage0), /*seed=*/5);
    load_exported_weights(*from_bf16.engine, *comm, st16, tiny_run_config());
    EXPECT_EQ(compare_states(gather_state(*from_bf16.engine, 0), rounded), "") << "bf16 safetensors";
    TrainedEngine from_plain(*comm, RunSetup(ZeroStage::kStage0), /*seed=*/5);
    load_exported_weights(*from_plain.engine, *comm, plain, tiny_run_config());
    EXPECT_EQ(compare_states(gather_state(*from_plain.engine, 0), with_padding_zeroed(saved)), "")
        << "names without the transformer. prefix";
  }
  // The same file split into 3 shards with an index, as save_pretrained writes a large model.
  const fs::path sharded = dir.path() / "sharded";
  if (world.rank() == 0) {
    try {
      write_sharded_copy(st, sharded, 3);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "rank 0: " << e.what();
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  {
    TrainedEngine from_shards(world, RunSetup(ZeroStage::kStage3), /*seed=*/11);
    load_exported_weights(*from_shards.engine, world, sharded, tiny_run_config());
    EXPECT_EQ(compare_states(gather_state(*from_shards.engine, 0), with_padding_zeroed(saved)), "") << "3 shards";
  }
  // Also at 2 ranks, ZeRO-3 (each rank stages its own range).
  {
    TrainedEngine tuned(world, RunSetup(ZeroStage::kStage3), /*seed=*/7);
    load_exported_weights(*tuned.engine, world, st, tiny_run_config());
    EXPECT_EQ(compare_states(gather_state(*tuned.engine, 0), with_padding_zeroed(saved)), "") << "2 ranks ZeRO-3";
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(SafetensorsExport, AnExtensionThatDoesNotMatchTheFormatIsRefused) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  TrainedEngine run(world, RunSetup(ZeroStage::kStage0));
  run.train(0, 1);
  save_checkpoint(*run.engine, world, dir.path(), run.progress(1), tiny_run_config());
  if (world.rank() == 0) {
    ExportOptions o;
    o.format = ExportFormat::kSafetensors;
    try {
      export_checkpoint(dir.path(), dir.path() / "model.h5", o);
      ADD_FAILURE() << "safetensors written to model.h5";
    } catch (const SettingError& e) {
      EXPECT_EQ(e.setting(), "export.out");
      EXPECT_NE(std::string(e.what()).find(".safetensors"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(fs::exists(dir.path() / "model.h5"));
    for (const ExportFormat format : {ExportFormat::kHdf5, ExportFormat::kTorchNames}) {
      o.format = format;
      EXPECT_THROW(export_checkpoint(dir.path(), dir.path() / "model.safetensors", o), SettingError);
      EXPECT_FALSE(fs::exists(dir.path() / "model.safetensors"));
    }
    // The program: exit 2 and the reason; the right extension works.
    const ChildResult bad = run_child_job(tessera_ckpt() + " export " + dir.path().string() + " " +
                                              (dir.path() / "m.h5").string() + " --format safetensors",
                                          60);
    EXPECT_EQ(bad.exit_code, 2) << bad.output;
    EXPECT_NE(bad.output.find("does not end in .safetensors"), std::string::npos) << bad.output;
    const ChildResult good = run_child_job(tessera_ckpt() + " export " + dir.path().string() + " " +
                                               (dir.path() / "m.safetensors").string() + " --format safetensors",
                                           60);
    EXPECT_EQ(good.exit_code, 0) << good.output;
    EXPECT_TRUE(fs::exists(dir.path() / "config.json")) << good.output;
    const ChildResult unknown = run_child_job(
        tessera_ckpt() + " export " + dir.path().string() + " " + (dir.path() / "m.onnx").string() + " --format onnx",
        60);
    EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
    EXPECT_NE(unknown.output.find("--format onnx"), std::string::npos) << unknown.output;
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace tessera::testing
