// Checkpoints written in format 1 (before the state list: every unit held exactly master, exp_avg
// and exp_avg_sq, f32) still load: a format-1 checkpoint of a 2-rank ZeRO-2 run (kept under
// tests/checkpointing/data/) resumes on 1 and 2 ranks at other stages with every state tensor equal
// to the one the file stores; a format this build does not know is refused naming its version; a
// checkpoint of another optimizer's state is refused naming both state lists.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>

#include <cstdlib>

#include "checkpoint_test_support.hpp"
#include "tessera/checkpointing/format/checkpoint_error.hpp"
#include "tessera/checkpointing/load/checkpoint_loader.hpp"
#include "tessera/checkpointing/format/checkpoint_meta.hpp"
#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/checkpointing/format/hdf5_util.hpp"

namespace tessera::testing {
namespace {

namespace fs = std::filesystem;

// The model the fixture was trained with (train_gpt --layers 1 --dim 16 --heads 2 --seq-len 16
// --vocab 264, 2 ranks, ZeRO-2, 3 steps).
GptConfig fixture_gpt() { return {/*vocab*/ 264, /*seq*/ 16, /*layers*/ 1, /*heads*/ 2, /*dim*/ 16}; }

fs::path fixture_dir() {
  const char* source = std::getenv("TESSERA_SOURCE_DIR");
  return fs::path(source != nullptr ? source : ".") / "tests/checkpointing/data/format1_zero2_2ranks";
}

// A copy of the fixture in a fresh directory (tests never touch the source tree).
fs::path copy_fixture(const SharedTempDir& tmp) {
  const fs::path dir = tmp.path() / "step_0000003";
  if (world_rank() == 0) fs::copy(fixture_dir(), dir, fs::copy_options::recursive);
  MPI_Barrier(MPI_COMM_WORLD);
  return dir;
}

TEST(CheckpointFormat1, LoadsAtAnyRankCountAndStage) {
  ASSERT_TRUE(fs::exists(fixture_dir() / "meta.h5")) << fixture_dir() << " (set TESSERA_SOURCE_DIR)";
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  const CheckpointMeta meta = read_meta_file((dir / kMetaFileName).string());
  EXPECT_EQ(meta.format_version, 1);
  ASSERT_EQ(meta.layout.states.size(), 3u);
  EXPECT_EQ(meta.layout.states[1].name, "exp_avg");

  MpiCommunicator world(MPI_COMM_WORLD);
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    auto device = make_cpu_device();
    Gpt model(fixture_gpt());
    ShardingConfig config;
    config.stage = stage;
    ShardedEngine engine(model, *device, world, config, 99);
    RunConfig expected;
    add_gpt_config(expected, fixture_gpt());
    const LoadResult loaded = load_checkpoint(engine, world, dir, expected);
    const std::string what = std::to_string(world.size()) + " ranks, ZeRO-" + std::to_string(zero_stage_number(stage));
    EXPECT_EQ(loaded.progress.step, 3) << what;
    EXPECT_EQ(engine.optimizer_steps(), 3) << what;
    // Every state tensor equals what the file stores, read through meta.h5's virtual datasets.
    const std::string meta_file = (dir / kMetaFileName).string();
    const char* groups[3] = {"/model/", "/optimizer/exp_avg/", "/optimizer/exp_avg_sq/"};
    for (int kind = 0; kind < 3; ++kind) {
      const auto state = gather_state(engine, kind);
      for (const NamedParameter& np : model.named_parameters()) {
        const auto stored = h5_read(meta_file, groups[kind] + np.name);
        EXPECT_EQ(compare_states({{np.name, state.at(np.name)}}, {{np.name, stored}}), "")
            << what << ": " << groups[kind] << np.name;
      }
    }
  }
}

TEST(CheckpointFormat1, UnknownVersionIsRefusedByNumber) {
  SharedTempDir tmp;
  const fs::path dir = copy_fixture(tmp);
  if (world_rank() == 0) {
    detail::Hdf5Guard guard;
    detail::H5Id file = detail::open_file_readwrite((dir / kMetaFileName).string());
    H5Adelete(file.get(), "tessera_checkpoint_format");
    detail::write_attribute(file.get(), "tessera_checkpoint_format", std::int64_t{99});
  }
  MPI_Barrier(MPI_COMM_WORLD);
  try {
    read_meta_file((dir / kMetaFileName).string());
    FAIL() << "format 99 was read";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kUnknownFormat);
    EXPECT_NE(std::string(e.what()).find("format version 99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reads versions 1 to 3"), std::string::npos) << e.what();
  }
}

TEST(CheckpointFormat1, AnotherOptimizersStateIsRefusedByName) {
  CheckpointLayout stored, current;
  stored.states = {{"master", DType::kF32}, {"exp_avg", DType::kF32}, {"exp_avg_sq", DType::kF32}};
  current.states = {{"master", DType::kF32}, {"exp_avg_q", DType::kI32}};
  try {
    check_same_states(stored, current, "ckpt/meta.h5");
    FAIL() << "different state lists were accepted";
  } catch (const CheckpointError& e) {
    EXPECT_EQ(e.kind(), CheckpointErrorKind::kConfigMismatch);
    const std::string text = e.what();
    EXPECT_NE(text.find("master f32, exp_avg f32, exp_avg_sq f32"), std::string::npos) << text;
    EXPECT_NE(text.find("exp_avg_q i32"), std::string::npos) << text;
  }
  EXPECT_NO_THROW(check_same_states(stored, stored, "ckpt/meta.h5"));
}

}  // namespace
}  // namespace tessera::testing
