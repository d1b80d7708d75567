// Validation before anything changes: a missing or truncated shard, an unknown format version, a
// checkpoint of another model (config fields, parameter shapes), a missing meta.h5 and a corrupted
// dataset each give a CheckpointError of the right kind whose message names the file (and dataset)
// and what differs — on every rank, also when only one rank read the bad bytes. The engine is
// untouched, except by a corrupted dataset in a one-pass load: that leaves it marked, refusing
// forward and saves naming the checkpoint, until a good load makes it whole. With
// verify_before_writing every refusal leaves it untouched. `tessera_ckpt` exits with status 1 and
// the same message.
// tessera-test-ranks: 2
// tessera-test-timeout: 300
#include <gtest/gtest.h>
#include <hdf5.h>

#include <cstdio>
#include <fstream>
#include <functional>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/save/checkpoint_saver.hpp"
#include "tests/launch/child_job.hpp"

namespace fs = std::filesystem;

namespace tessera::testing {
namespace {

constexpr int kCorruptionSaveAt = 2;

struct CorruptionCase {
  std::string name;
  std::function<void(const fs::path& ckpt)> corrupt;  // runs on rank 0
  CheckpointErrorKind kind;
  std::vector<std::string> message_parts;
  std::string tool_command;  // tessera_ckpt subcommand that must fail, or ""
  RunConfig expected = tiny_run_config();
  bool in_data = false;  // found while reading the state: the one-pass load wrote part of it first
};

// Flips one byte in the middle of chunk `chunk` of `dataset` in `file`, leaving the file size alone.
void flip_chunk_byte(const fs::path& file, const std::string& dataset, hsize_t chunk) {
  haddr_t address = 0;
  hsize_t size = 0;
  {
    detail::Hdf5Guard guard;
    detail::H5Id f = detail::open_file_read(file.string());
    detail::H5Id d = detail::open_dataset(f.get(), dataset, file.string());
    detail::H5Id space(H5Dget_space(d.get()), H5Sclose);
    hsize_t offset[1];
    unsigned mask = 0;
    ASSERT_GE(H5Dget_chunk_info(d.get(), space.get(), chunk, offset, &mask, &address, &size), 0) << dataset;
  }
  std::fstream io(file, std::ios::in | std::ios::out | std::ios::binary);
  io.seekg(static_cast<std::streamoff>(address + size / 2));
  char byte = 0;
  io.read(&byte, 1);
  byte = static_cast<char>(byte ^ 0x5a);
  io.seekp(static_cast<std::streamoff>(address + size / 2));
  io.write(&byte, 1);
}

std::string state_fingerprint(ShardedEngine& engine) {
  std::string out;
  for (int kind = 0; kind < 3; ++kind) {
    for (const auto& [name, values] : gather_state(engine, kind)) {
      out.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
    }
  }
  return out + std::to_string(engine.optimizer_steps());
}

TEST(CheckpointCorruption, EachCaseNamesTheProblemAndChangesNothing) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  const fs::path good = dir.path() / "good";
  {
    TrainedEngine run(world, RunSetup(ZeroStage::kStage2));
    run.train(0, kCorruptionSaveAt);
    SaveOptions options;
    options.chunk_elements = 64;
    save_checkpoint(*run.engine, world, good, run.progress(kCorruptionSaveAt), tiny_run_config(), options);
  }
  const std::string shard0 = shard_file_name(0), shard1 = shard_file_name(1);
  std::vector<CorruptionCase> cases = {
      {"missing shard",
       [&](const fs::path& c) { fs::remove(c / shard1); },
       CheckpointErrorKind::kMissingFile,
       {shard1, "is missing"},
       "info"},
      {"truncated shard",
       [&](const fs::path& c) { fs::resize_file(c / shard0, fs::file_size(c / shard0) / 2); },
       CheckpointErrorKind::kTruncatedFile,
       {shard0, "truncated", "bytes but"},
       "info"},
      {"unknown format version",
       [](const fs::path& c) {
         detail::Hdf5Guard guard;
         detail::H5Id f = detail::open_file_readwrite((c / kMetaFileName).string());
         detail::write_attribute(f.get(), "tessera_checkpoint_format", std::int64_t{99});
       },
       CheckpointErrorKind::kUnknownFormat,
       {"meta.h5", "format version 99", "this build reads versions 3 to 5"},
       "info"},
      {"missing meta.h5",
       [](const fs::path& c) { fs::remove(c / kMetaFileName); },
       CheckpointErrorKind::kMissingFile,
       {"meta.h5", "not a complete checkpoint"},
       ""},
      {"corrupted dataset",
       [&](const fs::path& c) { flip_chunk_byte(c / shard1, "/units/h.0/exp_avg", 1); },
       CheckpointErrorKind::kCorruptData,
       {shard1, "/units/h.0/exp_avg", "is corrupted", "chunk 1"},
       "verify",
       tiny_run_config(),
       true},
  };
  CorruptionCase layers{"model config: layers",
                        [](const fs::path&) {},
                        CheckpointErrorKind::kConfigMismatch,
                        {"meta.h5", "layers = 2", "layers = 3"},
                        ""};
  GptConfig three_layers = tiny_gpt();
  three_layers.layers = 3;
  layers.expected = tiny_run_config(three_layers);
  cases.push_back(layers);
  CorruptionCase vocab{"model config: vocab",
                       [](const fs::path&) {},
                       CheckpointErrorKind::kConfigMismatch,
                       {"vocab_size = 13", "vocab_size = 50"},
                       ""};
  GptConfig bigger_vocab = tiny_gpt();
  bigger_vocab.vocab_size = 50;
  vocab.expected = tiny_run_config(bigger_vocab);
  cases.push_back(vocab);

  TrainedEngine victim(world, RunSetup(ZeroStage::kStage2), /*seed=*/999);
  victim.train(0, 1);
  std::string before = state_fingerprint(*victim.engine);
  for (const CorruptionCase& c : cases) {
    const fs::path ckpt = dir.path() / ("case_" + std::to_string(&c - cases.data())) / step_dir_name(kCorruptionSaveAt);
    if (world.rank() == 0) {
      fs::create_directories(ckpt.parent_path());
      fs::copy(good / step_dir_name(kCorruptionSaveAt), ckpt, fs::copy_options::recursive);
      c.corrupt(ckpt);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // Verifying before writing: every refusal leaves the engine as it was. The default one pass:
    // so does every refusal found before the data; one found in the data leaves the engine marked.
    for (const bool verify_first : {true, false}) {
      const std::string mode = verify_first ? " (verify_before_writing)" : " (one pass)";
      try {
        load_checkpoint(*victim.engine, world, ckpt, c.expected, LoadOptions{verify_first});
        ADD_FAILURE() << c.name << mode << ": the checkpoint was accepted, rank " << world.rank();
      } catch (const CheckpointError& e) {
        EXPECT_EQ(e.kind(), c.kind) << c.name << mode << ": got a '" << checkpoint_error_kind_name(e.kind())
                                    << "' error: " << e.what();
        for (const std::string& part : c.message_parts) {
          EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
              << c.name << mode << ": the message lacks \"" << part << "\": " << e.what() << " (rank " << world.rank()
              << ")";
        }
      }
      if (verify_first || !c.in_data) {
        EXPECT_EQ(state_fingerprint(*victim.engine), before)
            << c.name << mode << ": the engine changed, rank " << world.rank();
        continue;
      }
      // Part of the state holds the refused checkpoint: training and saving refuse, naming it.
      const std::string named = "partly overwritten by a refused load of " + ckpt.string();
      for (const auto& [use, call] : std::vector<std::pair<std::string, std::function<void()>>>{
               {"forward", [&] { victim.train(1, 2); }}, {"a checkpoint save", [&] {
                                                            save_checkpoint(*victim.engine, world, dir.path() / "never",
                                                                            victim.progress(1), tiny_run_config());
                                                          }}}) {
        try {
          call();
          ADD_FAILURE() << c.name << ": " << use << " ran on a partly loaded engine, rank " << world.rank();
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find(use + " refused: the state was " + named), std::string::npos)
              << e.what();
        }
      }
      EXPECT_FALSE(fs::exists(dir.path() / "never" / step_dir_name(1)));
      // A load that completes makes it whole: the victim then holds exactly the good checkpoint.
      load_checkpoint(*victim.engine, world, good / step_dir_name(kCorruptionSaveAt), tiny_run_config());
      TrainedEngine fresh(world, RunSetup(ZeroStage::kStage2), /*seed=*/999);
      load_checkpoint(*fresh.engine, world, good / step_dir_name(kCorruptionSaveAt), tiny_run_config());
      EXPECT_EQ(state_fingerprint(*victim.engine), state_fingerprint(*fresh.engine));
      EXPECT_EQ(victim.train(kCorruptionSaveAt, kCorruptionSaveAt + 1), fresh.train(kCorruptionSaveAt, kCorruptionSaveAt + 1));
      before = state_fingerprint(*victim.engine);  // the state the remaining cases must leave alone
    }
    if (world.rank() == 0 && !c.tool_command.empty()) {
      const ChildResult r = run_child_job(tessera_ckpt() + " " + c.tool_command + " " + ckpt.string(), 60);
      EXPECT_EQ(r.exit_code, 1) << c.name << ": tessera_ckpt " << c.tool_command << " output:\n" << r.output;
      EXPECT_NE(r.output.find(c.message_parts.front()), std::string::npos) << c.name << ":\n" << r.output;
    }
  }
  // The good checkpoint still loads after all that.
  load_checkpoint(*victim.engine, world, good / step_dir_name(kCorruptionSaveAt), tiny_run_config());
  EXPECT_EQ(victim.engine->optimizer_steps(), kCorruptionSaveAt);
}

TEST(CheckpointCorruption, ParameterShapesOfAnotherModelAreNamed) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  {
    TrainedEngine run(world, RunSetup(ZeroStage::kStage3));
    save_checkpoint(*run.engine, world, dir.path(), run.progress(0), tiny_run_config());
  }
  GptConfig wider = tiny_gpt();
  wider.channels = 12;
  TrainedEngine other(world, RunSetup(ZeroStage::kStage3), kSeed, wider);
  const std::string before = state_fingerprint(*other.engine);
  try {
    load_checkpoint(*other.engine, world, dir.path() / step_dir_name(0), RunConfig{});  // no fields: shapes decide
    ADD_FAILURE() << "a checkpoint of another model shape was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch) << e.what();
    for (const char* part : {"'embed.wte'", "(13, 9) in the checkpoint", "(13, 12) in this model"}) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "message lacks \"" << part << "\": " << e.what();
    }
  }
  EXPECT_EQ(state_fingerprint(*other.engine), before);
}

}  // namespace
}  // namespace tessera::testing
